package launch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/runroot"
)

// The test binary doubles as the csisim binary and as a launcher that dies
// without cleaning up:
//
//   - CSISIM_TEST_DRIVER=1 makes it behave like `csisim`: it expects the
//     subcommand "driver" as its first argument and hands the rest to
//     hostpath.Main, exactly as cmd/csisim does. So OurDriver(os.Args[0], ...)
//     is tested unchanged.
//   - CSISIM_TEST_LAUNCHER=1 makes it start `sleep`, print the sleeper's PID
//     and exit at once, to check that the parent-death signal kills it.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("CSISIM_TEST_DRIVER") == "1":
		args := os.Args[1:]
		if len(args) == 0 || args[0] != "driver" {
			fmt.Fprintf(os.Stderr, "test driver: want subcommand \"driver\", got %q\n", args)
			os.Exit(2)
		}
		os.Exit(hostpath.Main(args[1:], os.Stdout, os.Stderr))
	case os.Getenv("CSISIM_TEST_LAUNCHER") == "1":
		p, err := Start(context.Background(), "sleeper", Template{Path: "/bin/sleep", Args: []string{"60"}}, Vars{}, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(p.PID())
		os.Exit(0) // no Stop: the kernel must clean up
	}
	os.Exit(m.Run())
}

// syncBuffer is a log destination that tests can read while drivers write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRoot(t *testing.T) *runroot.Root {
	t.Helper()
	r, err := runroot.New("launch-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("clean run root: %v", err)
		}
	})
	return r
}

func testDriver(mode string) Template {
	t := OurDriver(os.Args[0], mode, "launch.csisim.io")
	t.Env = []string{"CSISIM_TEST_DRIVER=1"}
	return t
}

func varsIn(r *runroot.Root, node string) Vars {
	return Vars{
		Endpoint: "unix://" + r.Path(node+".sock"),
		NodeID:   node,
		StateDir: r.Path("state", node),
		Root:     r.Path("backend"),
	}
}

// gone reports whether pid no longer runs: it does not exist, or it is a
// zombie nobody has reaped yet.
func gone(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// groupAlive reports whether any process of group pgid still runs. Zombies
// do not count: whoever inherited them may be slow to reap them.
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // not a process, or gone
		}
		// After "pid (comm)": state, ppid, pgrp, ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartOurDriver(t *testing.T) {
	for _, mode := range []string{"all", "controller", "node"} {
		t.Run(mode, func(t *testing.T) {
			r := newRoot(t)
			var log syncBuffer
			v := varsIn(r, "node-1")
			p, err := Start(context.Background(), "hostpath-"+mode, testDriver(mode), v, &log)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Kill() })

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.WaitReady(ctx); err != nil {
				t.Fatalf("WaitReady: %v", err)
			}

			conn, err := grpc.NewClient(v.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
			if err != nil {
				t.Fatalf("GetPluginInfo: %v", err)
			}
			if info.GetName() != "launch.csisim.io" {
				t.Fatalf("driver name = %q", info.GetName())
			}

			pid := p.PID()
			if err := p.Stop(5 * time.Second); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-p.Exited():
			default:
				t.Fatal("Exited not closed after Stop")
			}
			if err := p.Wait(); err != nil {
				t.Fatalf("driver did not exit cleanly on SIGTERM: %v", err)
			}
			if !gone(pid) {
				t.Fatalf("process %d still exists after Stop", pid)
			}
			if groupAlive(t, pid) {
				t.Fatalf("process group %d still has running members", pid)
			}
			if _, err := os.Stat(r.Path("node-1.sock")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("driver left its socket behind: %v", err)
			}
			if !strings.Contains(log.String(), "[hostpath-"+mode+"] ") || !strings.Contains(log.String(), "GetPluginInfo") {
				t.Fatalf("driver output not logged with prefix:\n%s", log.String())
			}
		})
	}
}

func TestWaitReadyReportsEarlyExit(t *testing.T) {
	tests := []struct {
		name string
		tmpl Template
		want []string
	}{
		{"false", Template{Path: "/bin/false"}, []string{"exited before becoming ready", "exit status 1", "no output"}},
		{"shell complaining", Template{Path: "/bin/sh", Args: []string{"-c", "echo first; echo 'cannot open {root}/x' >&2; exit 3"}},
			[]string{"exit status 3", "first", "cannot open /"}},
		{"driver with bad flag", Template{Path: os.Args[0], Args: []string{"driver", "--bogus"}, Env: []string{"CSISIM_TEST_DRIVER=1"}},
			[]string{"exit status 2", "csisim driver: flag provided but not defined: -bogus (see --help)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRoot(t)
			p, err := Start(context.Background(), tc.name, tc.tmpl, varsIn(r, "n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = p.WaitReady(ctx)
			if err == nil {
				t.Fatal("WaitReady succeeded for a driver that exits")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestWaitReadyTimesOut(t *testing.T) {
	r := newRoot(t)
	p, err := Start(context.Background(), "mute", Template{Path: "/bin/sh", Args: []string{"-c", "echo starting; exec sleep 30"}}, varsIn(r, "n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.WaitReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("WaitReady = %v, want a 'not ready' error quoting the output", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("WaitReady took %s despite a 300ms deadline", d)
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	r := newRoot(t)
	var log syncBuffer
	// A shell that ignores SIGTERM and keeps forking children.
	tmpl := Template{Path: "/bin/sh", Args: []string{"-c", `trap "" TERM; echo up; while :; do sleep 0.05; done`}}
	p, err := Start(context.Background(), "stubborn", tmpl, varsIn(r, "n"), &log)
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "up") {
		time.Sleep(10 * time.Millisecond)
	}
	pid := p.PID()
	start := time.Now()
	if err := p.Stop(200 * time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Stop took %s, want about the 200ms grace", d)
	}
	if !gone(pid) {
		t.Fatalf("process %d survived Stop", pid)
	}
	deadline := time.Now().Add(2 * time.Second)
	for groupAlive(t, pid) {
		if time.Now().After(deadline) {
			t.Fatalf("children in process group %d survived Stop", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "sending SIGKILL") {
		t.Fatalf("escalation not logged:\n%s", log.String())
	}
}

// TestStopAndKillEndTheWholeGroup: what the driver forked goes with it,
// and is gone when Stop or Kill returns — a helper left running when the
// driver leaves on SIGTERM as well as one that dies a moment after the
// driver on SIGKILL.
func TestStopAndKillEndTheWholeGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		// The driver forks a child that outlives it unless killed.
		script string
		end    func(*Process) error
	}{
		{"Stop, the driver leaving on SIGTERM", `sleep 30 & trap "exit 0" TERM; echo up; while :; do sleep 0.05; done`,
			func(p *Process) error { return p.Stop(5 * time.Second) }},
		{"Kill", `sleep 30 & echo up; exec sleep 30`, (*Process).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRoot(t)
			var log syncBuffer
			p, err := Start(context.Background(), "forker", Template{Path: "/bin/sh", Args: []string{"-c", tc.script}}, varsIn(r, "n"), &log)
			if err != nil {
				t.Fatal(err)
			}
			for !strings.Contains(log.String(), "up") {
				time.Sleep(10 * time.Millisecond)
			}
			if err := tc.end(p); err != nil {
				t.Fatal(err)
			}
			if groupAlive(t, p.PID()) {
				t.Errorf("process group %d still has processes when %s returned", p.PID(), tc.name)
			}
		})
	}
}

func TestKillAndContextEnd(t *testing.T) {
	r := newRoot(t)
	sleeper := Template{Path: "/bin/sleep", Args: []string{"30"}}

	p, err := Start(context.Background(), "killed", sleeper, varsIn(r, "n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait after Kill = %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Fatalf("Stop after Kill: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	p, err = Start(ctx, "cancelled", sleeper, varsIn(r, "n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		_ = p.Kill()
		t.Fatal("driver still running after its context ended")
	}
}

// A driver must survive the end of the goroutine — and OS thread — that
// started it, yet die with the simulator.
func TestParentDeathSignal(t *testing.T) {
	t.Run("survives a dead starter thread", func(t *testing.T) {
		r := newRoot(t)
		started := make(chan *Process, 1)
		go func() {
			// Returning while locked makes the runtime end this thread.
			runtime.LockOSThread()
			p, err := Start(context.Background(), "orphan", Template{Path: "/bin/sleep", Args: []string{"30"}}, varsIn(r, "n"), nil)
			if err != nil {
				t.Error(err)
			}
			started <- p
		}()
		p := <-started
		if p == nil {
			t.FailNow()
		}
		defer p.Kill()
		time.Sleep(300 * time.Millisecond)
		select {
		case <-p.Exited():
			t.Fatalf("driver died with the thread that called Start: %v", p.Wait())
		default:
		}
	})

	t.Run("dies with the simulator", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CSISIM_TEST_LAUNCHER=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if werr := cmd.Wait(); werr != nil {
			t.Fatalf("launcher: %v: %s", werr, stderr.String())
		}
		if err != nil {
			t.Fatalf("read sleeper pid: %v: %s", err, stderr.String())
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
		waitGone(t, pid, 5*time.Second)
	})
}

func TestExpand(t *testing.T) {
	v := Vars{Endpoint: "unix:///r/csi.sock", NodeID: "n1", StateDir: "/r/state", Root: "/r/backend",
		Zone: "z1", DriverName: "d.example.com", CSISim: "/bin/csisim"}
	tests := []struct {
		name    string
		tmpl    Template
		vars    *Vars // default v
		want    Template
		wantErr string
	}{
		{
			name: "our driver",
			tmpl: OurDriver("/bin/csisim", "node", "x.csisim.io"),
			want: Template{Path: "/bin/csisim", Args: []string{"driver", "--endpoint", "unix:///r/csi.sock", "--node-id", "n1",
				"--root", "/r/backend", "--state-dir", "/r/state", "--mode", "node", "--driver-name", "x.csisim.io"}},
		},
		{
			name: "our controller takes no node id",
			tmpl: OurDriver("/bin/csisim", "controller", ""),
			want: Template{Path: "/bin/csisim", Args: []string{"driver", "--endpoint", "unix:///r/csi.sock",
				"--root", "/r/backend", "--state-dir", "/r/state", "--mode", "controller"}},
		},
		{
			name: "upstream hostpath style",
			tmpl: Template{Path: "/hostpathplugin", Args: []string{"--endpoint={endpoint}", "--nodeid={nodeID}", "--statedir={stateDir}"}, Env: []string{"DATA={root}/data"}},
			want: Template{Path: "/hostpathplugin", Args: []string{"--endpoint=unix:///r/csi.sock", "--nodeid=n1", "--statedir=/r/state"}, Env: []string{"DATA=/r/backend/data"}},
		},
		{
			name: "braces that are no placeholder",
			tmpl: Template{Path: "/d", Args: []string{`{"json": 1}`, "{}", "{1x}"}},
			want: Template{Path: "/d", Args: []string{`{"json": 1}`, "{}", "{1x}"}},
		},
		{
			name: "profile placeholders",
			tmpl: Template{Path: "/cache/mock", Args: []string{"--zone={zone}", "--name", "{driverName}"}, Env: []string{"CSISIM={csisim}"}},
			want: Template{Path: "/cache/mock", Args: []string{"--zone=z1", "--name", "d.example.com"}, Env: []string{"CSISIM=/bin/csisim"}},
		},
		{name: "zone of a node without one", tmpl: Template{Path: "/d", Args: []string{"--zone", "{zone}"}}, vars: &Vars{Endpoint: "unix:///s"},
			wantErr: "placeholder {zone} has no value"},
		{name: "unknown placeholder", tmpl: Template{Path: "/d", Args: []string{"--x={nodeName}"}}, wantErr: "unknown placeholder {nodeName}"},
		{name: "wrong case", tmpl: Template{Path: "/d", Args: []string{"{NodeID}"}}, wantErr: "unknown placeholder {NodeID}"},
		{name: "unknown placeholder in env", tmpl: Template{Path: "/d", Env: []string{"A={home}"}}, wantErr: "unknown placeholder {home}"},
		{name: "no path", tmpl: Template{Args: []string{"x"}}, wantErr: "no executable path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := v
			if tc.vars != nil {
				vars = *tc.vars
			}
			got, err := tc.tmpl.Expand(vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expand error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%q %q %q", got.Path, got.Args, got.Env) != fmt.Sprintf("%q %q %q", tc.want.Path, tc.want.Args, tc.want.Env) {
				t.Fatalf("Expand =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}

	if _, err := OurDriver("/bin/csisim", "node", "").Expand(Vars{Endpoint: "unix:///s", StateDir: "/s", Root: "/r"}); err == nil ||
		!strings.Contains(err.Error(), "{nodeID} has no value") {
		t.Fatalf("empty node ID: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), "missing", Template{Path: "/nonexistent/driver"}, Vars{}, nil); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	if _, err := Start(context.Background(), "bad", Template{Path: "/bin/true", Args: []string{"{nope}"}}, Vars{}, nil); err == nil ||
		!strings.Contains(err.Error(), "unknown placeholder") {
		t.Fatalf("Start with unknown placeholder: %v", err)
	}
}
