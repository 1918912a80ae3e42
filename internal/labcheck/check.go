package labcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is what a check needs from outside the lab.
type Config struct {
	// BinDir holds the csisim binary the lab's commands call as csisim;
	// it goes first on PATH.
	BinDir string
	// Log receives progress: each step as it passes, serve's timeline when
	// a step fails.
	Log io.Writer
	// StartTimeout bounds how long serve may take to write its kubeconfig.
	StartTimeout time.Duration
	// CommandTimeout bounds one run of a command block.
	CommandTimeout time.Duration
	// RepoDir, when set, is linked into the directory a document's
	// commands run in, entry by entry (scenarios/, bin/, docs/...), so
	// that an example names the repository's files as a reader in a clone
	// does; what the commands write stays in that directory.
	RepoDir string
	// CIScript is the script CI runs (.ci/run): a ```sh ci block's commands
	// must each be one of its stages.
	CIScript string
}

// Check runs lab from a fresh csisim serve to its end, in a temporary
// directory, and returns the first step whose output is not what the lab
// says (or whose command fails). Serve is stopped, and cleans up, either
// way. A document without a serve block has its commands run alone.
func Check(ctx context.Context, lab *Lab, cfg Config) (err error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = 3 * time.Minute
	}
	dir, err := os.MkdirTemp("", "csisim-lab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := checkCI(lab, cfg.CIScript); err != nil {
		return err
	}
	if err := linkRepo(dir, cfg.RepoDir); err != nil {
		return err
	}
	if lab.Serve.Kind != Serve {
		// A document without a cluster: its commands alone.
		env := append(os.Environ(), "PATH="+cfg.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		return runSteps(ctx, lab, dir, env, nil, cfg)
	}
	kubeconfig, err := kubeconfigOf(lab.Serve.Text)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", lab.File, lab.Serve.Line, err)
	}
	env := append(os.Environ(), "PATH="+cfg.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+filepath.Join(dir, kubeconfig))
	srv, err := startServe(dir, env, lab.Serve.Text)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", lab.File, lab.Serve.Line, err)
	}
	defer func() {
		if stopErr := srv.stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("%s:%d: %w", lab.File, lab.Serve.Line, stopErr)
		}
		if err != nil {
			fmt.Fprintf(cfg.Log, "--- serve's output:\n%s--- serve's errors:\n%s", srv.out.String(), srv.errOut.String())
		}
	}()
	if err := srv.waitFor(ctx, kubeconfig, cfg.StartTimeout); err != nil {
		return fmt.Errorf("%s:%d: %w", lab.File, lab.Serve.Line, err)
	}
	return runSteps(ctx, lab, dir, env, srv, cfg)
}

// runSteps runs the lab's steps in dir with env, checking the timeline of
// srv (nil for a document without serve, which has no timeline steps).
func runSteps(ctx context.Context, lab *Lab, dir string, env []string, srv *server, cfg Config) (err error) {
	// A timeline step looks at serve's output from the first command after
	// the previous timeline step on (from, a line number), and after the
	// lines that step matched (cursor).
	from, cursor, marked := 0, 0, false
	for _, st := range lab.Steps {
		start := time.Now()
		var line int
		if st.Timeline != nil {
			line = st.Timeline.Line
			if cursor, err = matchTimeline(ctx, srv, st.Timeline, max(from, cursor)); err != nil {
				return fmt.Errorf("%s:%d: %w", lab.File, line, err)
			}
			marked = false
		} else {
			line = st.Run.Line
			if !marked && srv != nil {
				from, marked = strings.Count(srv.out.String(), "\n"), true
			}
			timeout := cfg.CommandTimeout
			if st.Run.Timeout > 0 {
				timeout = st.Run.Timeout
			}
			if err := runStep(ctx, dir, env, st, timeout); err != nil {
				return fmt.Errorf("%s:%d: %w", lab.File, line, err)
			}
		}
		fmt.Fprintf(cfg.Log, "ok  %s:%d (%.1fs)\n", lab.File, line, time.Since(start).Seconds())
	}
	return nil
}

// kubeconfigOf finds the --kubeconfig FILE of the serve command; it must
// be relative, so that the lab runs in any directory.
func kubeconfigOf(serve string) (string, error) {
	words := strings.Fields(serve)
	for i, w := range words {
		path, ok := strings.CutPrefix(w, "--kubeconfig=")
		if w == "--kubeconfig" && i+1 < len(words) {
			path, ok = words[i+1], true
		}
		if ok {
			if filepath.IsAbs(path) {
				return "", fmt.Errorf("serve's --kubeconfig %s must be relative, so that the lab runs anywhere", path)
			}
			return path, nil
		}
	}
	return "", errors.New("the serve command must write --kubeconfig FILE (relative), for the other commands' KUBECONFIG")
}

// runStep runs a command block, again and again (also when it fails) until
// its output is what the lab expects, if the lab allows time for that.
func runStep(ctx context.Context, dir string, env []string, st Step, timeout time.Duration) error {
	var deadline time.Time
	if st.Expected != nil {
		deadline = time.Now().Add(st.Expected.Within)
	}
	for {
		out, err := runBlock(ctx, dir, env, st.Run.Text, timeout)
		if st.Expected == nil || (err != nil && time.Now().After(deadline)) {
			return err
		}
		got, want := normalize(out), normalize(st.Expected.Text)
		if err == nil && outputMatches(got, want) {
			return nil
		}
		if err == nil && time.Now().After(deadline) {
			within := ""
			if st.Expected.Within > 0 {
				within = " within " + st.Expected.Within.String()
			}
			return fmt.Errorf("the output is not the expected one (line %d)%s:\n--- expected:\n%s\n--- got:\n%s", st.Expected.Line, within, want, got)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// runBlock runs one command block with bash and returns its output.
func runBlock(ctx context.Context, dir string, env []string, script string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	// The block's commands run in a process group of their own, and a
	// block that runs out of time is ended whole: killing bash alone would
	// leave what it started (a go test, a csisim run) running, holding the
	// output pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("the commands failed: %w\n--- commands:\n%s--- output:\n%s%s", err, script, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// outputMatches says whether a command's output is the one a document
// shows: line by line, the same text — or, for a line of the document with
// " ... " in it, the parts between in order (lineMatches), so that a
// document can leave out what differs between runs (wall-clock durations,
// generated names).
func outputMatches(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) {
		return false
	}
	for i := range w {
		want := w[i]
		if strings.HasSuffix(want, " ...") {
			want += " " // the rest of the line
		}
		if g[i] != w[i] && !(strings.Contains(want, " ... ") && lineMatches(g[i], want)) {
			return false
		}
	}
	return true
}

// linkRepo links each entry of repo (but .git) into dir; nothing without
// a repo.
func linkRepo(dir, repo string) error {
	if repo == "" {
		return nil
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(repo)
	if err != nil {
		return fmt.Errorf("linking the repository into the document's directory: %w", err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("linking the repository into the document's directory: %w", err)
		}
	}
	return nil
}

// checkCI checks that each command of the lab's ```sh ci blocks is a stage
// of the CI script: `stage NAME COMMAND` with that COMMAND. A comment after
// a command (# ...) is the document's, not the command's.
func checkCI(lab *Lab, script string) error {
	if len(lab.CI) == 0 {
		return nil
	}
	if script == "" {
		return fmt.Errorf("%s:%d: a sh ci block, but no CI script to check it against", lab.File, lab.CI[0].Line)
	}
	data, err := os.ReadFile(script)
	if err != nil {
		return fmt.Errorf("reading the CI script: %w", err)
	}
	stages := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "stage" {
			stages[strings.Join(f[2:], " ")] = true
		}
	}
	for _, b := range lab.CI {
		for i, l := range strings.Split(strings.TrimRight(b.Text, "\n"), "\n") {
			cmd, _, _ := strings.Cut(l, "#")
			cmd = strings.Join(strings.Fields(cmd), " ")
			if cmd != "" && !stages[cmd] {
				return fmt.Errorf("%s:%d: %q is not a stage of %s, which a sh ci block's commands must be", lab.File, b.Line+1+i, cmd, script)
			}
		}
	}
	return nil
}

// normalize drops trailing spaces of each line and blank lines at the
// start and end: what a reader cannot see in a page.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// matchTimeline waits until each line of the block matches a line of
// serve's output (lineMatches), in order, from line cursor on, and returns
// the line after the last one matched.
func matchTimeline(ctx context.Context, srv *server, b *Block, cursor int) (int, error) {
	want := strings.Split(normalize(b.Text), "\n")
	deadline := time.Now().Add(b.Within)
	for {
		lines := strings.Split(srv.out.String(), "\n")
		at, missing := cursor, ""
		for _, w := range want {
			for at < len(lines) && !lineMatches(lines[at], w) {
				at++
			}
			if at == len(lines) {
				missing = w
				break
			}
			at++
		}
		if missing == "" {
			return at, nil
		}
		if time.Now().After(deadline) {
			return cursor, fmt.Errorf("the timeline did not show %q within %v (after the lines already matched, in order)", missing, b.Within)
		}
		select {
		case <-ctx.Done():
			return cursor, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lineMatches reports whether the parts of want, split at " ... ", are
// parts of line in that order, runs of spaces counting as one.
func lineMatches(line, want string) bool {
	line = strings.Join(strings.Fields(line), " ")
	for _, part := range strings.Split(want, " ... ") {
		part = strings.Join(strings.Fields(part), " ")
		i := strings.Index(line, part)
		if i < 0 {
			return false
		}
		line = line[i+len(part):]
	}
	return true
}

// server is the lab's csisim serve.
type server struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	errOut *syncBuffer
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

func startServe(dir string, env []string, text string) (*server, error) {
	cmd := exec.Command("bash", "-c", "exec "+strings.Join(strings.Fields(strings.ReplaceAll(text, "\\\n", " ")), " "))
	cmd.Dir, cmd.Env = dir, env
	s := &server{cmd: cmd, out: &syncBuffer{}, errOut: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.errOut
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting serve: %w", err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// waitFor waits until serve has written its kubeconfig and said so.
func (s *server) waitFor(ctx context.Context, kubeconfig string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(s.out.String(), "csisim: kubeconfig "+kubeconfig) {
		select {
		case <-s.exited:
			return fmt.Errorf("serve exited before it was ready: %v", s.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("serve did not write its kubeconfig %s within %v", kubeconfig, timeout)
		}
	}
	return nil
}

// stop stops serve as Ctrl-C does, so that it removes everything it made,
// and reports whether it exited cleanly.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return fmt.Errorf("serve exited during the lab: %v", s.err)
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("serve did not stop cleanly: %v", s.err)
		}
		return nil
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("serve did not stop within a minute of SIGTERM; killed")
	}
}

// syncBuffer is a buffer serve's output goes to while the checker reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
