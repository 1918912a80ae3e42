package realkube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one running component.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error
}

// startProcess starts bin with args, with cwd dir, its output going to
// logDir/<name>.log and (prefixed with [name]) to log. The child gets
// SIGKILL if the thread that started it dies (Pdeathsig), and runs in its
// own process group so a terminal's ^C does not reach it before Stop does.
func startProcess(name, bin, dir, logDir string, args, env []string, log io.Writer) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var out io.Writer = f
	if log != nil {
		out = io.MultiWriter(f, &prefixWriter{prefix: "[" + name + "] ", w: log})
	}
	cmd := exec.Command(bin, args...)
	// argv[0] is the component's name, whatever binary runs it: client-go
	// makes the user agent, and so the field manager the API server
	// records, from it (kube-controller-manager-timed writes as
	// kube-controller-manager, as the real component it stands for).
	cmd.Args[0] = name
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	fmt.Fprintf(f, "# %s %s %s\n", strings.Join(env, " "), bin, strings.Join(args, " "))
	if err := startLocked(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// startLocked starts cmd from one goroutine that is locked to its OS thread
// and never returns. Pdeathsig fires when the *thread* that forked the child
// exits, not the process; pinning the forks to a thread that lives as long
// as the process makes Pdeathsig mean "when the test process dies".
func startLocked(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forkReq = make(chan forkRequest)
		go func() {
			// Never unlocked, and this goroutine never returns.
			runtime.LockOSThread()
			for r := range forkReq {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forkReq <- forkRequest{cmd: cmd, done: done}
	return <-done
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	forkOnce sync.Once
	forkReq  chan forkRequest
)

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILL and waits for the
// process to be reaped. It only ever signals the PID it started, and only
// while that PID has not been reaped (so it cannot hit a recycled PID).
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

// exitError describes an unexpected exit with the tail of the log.
func (p *process) exitError() error {
	msg := fmt.Sprintf("%s exited", p.name)
	if p.waitErr != nil {
		msg += ": " + p.waitErr.Error()
	}
	return errors.New(msg + "\n" + p.logTail(30))
}

// logTail returns the last n lines of the process's log file.
func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.logPath, strings.Join(lines, "\n"))
}

// prefixWriter writes whole lines to w, each prefixed. Writers of all
// processes share one mutex so lines do not interleave.
type prefixWriter struct {
	prefix string
	w      io.Writer
	buf    []byte
}

var logMu sync.Mutex

func (pw *prefixWriter) Write(b []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	pw.buf = append(pw.buf, b...)
	for {
		i := bytes.IndexByte(pw.buf, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(pw.prefix), pw.buf[:i+1]...)
		pw.buf = pw.buf[i+1:]
		if _, err := pw.w.Write(line); err != nil {
			// Never fail the child's output because the log sink failed.
			pw.buf = nil
			break
		}
	}
	return len(b), nil
}
