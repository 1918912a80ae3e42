package realnodes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHostLockWaitsForTheLiveHolder(t *testing.T) {
	dir := t.TempDir()
	first, err := lockHost(context.Background(), dir, "/tmp/first-run", nil)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	logf := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	_, err = lockHost(ctx, dir, "/tmp/second-run", logf)
	want := fmt.Sprintf("held by another run with real nodes (pid %d, run root /tmp/first-run)", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second run while the first holds the host: err %v, want one containing %q", err, want)
	}
	if len(said) != 1 || !strings.Contains(said[0], "waiting for the host") {
		t.Errorf("what the waiting run said: %q, want one line saying it waits", said)
	}
	if _, free, err := tryLockHost(dir); err != nil || free {
		t.Errorf("tryLockHost while held: free=%v err=%v, want busy", free, err)
	}

	// The second run gets the host as soon as the first lets go of it.
	go func() {
		time.Sleep(lockPoll)
		_ = first.release(true)
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*lockPoll)
	defer cancel2()
	second, err := lockHost(ctx2, dir, "/tmp/second-run", nil)
	if err != nil {
		t.Fatalf("after the first run let go: %v", err)
	}
	_ = second.release(true)
}

// writeLeftRecord leaves in dir the record of a run that died holding the
// host, as recordHost writes it.
func writeLeftRecord(t *testing.T, dir string, h Host) {
	t.Helper()
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hostRecordFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeProcSys is a /proc/sys with the kubelet's settings at value.
func fakeProcSys(t *testing.T, value string) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range kubeletSysctls {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, k)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, k), []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestADeadHoldersRecordIsAdopted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		left        *Host
		wantSysctl  string
		wantAdopted string
	}{
		{name: "no run died holding the host: the machine as it is", wantSysctl: "1"},
		{name: "a run died holding it: the machine as that run found it",
			left:       &Host{Sysctls: map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "10", "kernel/panic_on_oops": "0"}, RunRoot: "/tmp/csisim-dead"},
			wantSysctl: "0", wantAdopted: "/tmp/csisim-dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lock, err := lockHost(context.Background(), dir, "/tmp/new-run", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.release(false)
			if tc.left != nil {
				writeLeftRecord(t, dir, *tc.left)
			}
			// The dead run's kubelet left its settings: 1 everywhere.
			h := &Host{procSys: fakeProcSys(t, "1")}
			if err := h.machineAsFound(lock); err != nil {
				t.Fatal(err)
			}
			if got := h.Sysctls["vm/overcommit_memory"]; got != tc.wantSysctl {
				t.Errorf("vm.overcommit_memory to put back: %s, want %s", got, tc.wantSysctl)
			}
			if h.Adopted != tc.wantAdopted {
				t.Errorf("adopted %q, want %q", h.Adopted, tc.wantAdopted)
			}
		})
	}
}

func TestRestoringADeadRunLeavesALiveHoldersHostAlone(t *testing.T) {
	dir := t.TempDir()
	live, err := lockHost(context.Background(), dir, "/tmp/live-run", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.release(false)
	// The live run's kubelet has set 1; the dead run found 0.
	procSys := fakeProcSys(t, "1")
	dead := &Host{LockDir: dir, RunRoot: t.TempDir(), procSys: procSys,
		Sysctls: map[string]string{"vm/overcommit_memory": "0"}}
	if err := dead.Restore(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(procSys, "vm/overcommit_memory"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "1" {
		t.Errorf("vm.overcommit_memory after a dead run's clean-up under a live holder: %s, want the live run's 1 left alone", got)
	}

	// Once no run holds the host, the dead run's clean-up puts it back.
	_ = live.release(false)
	dead.Existed = fixedPaths // nothing of the machine's to remove: only the run's own entries
	dead.Since = time.Now().Add(time.Hour)
	if err := dead.Restore(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(procSys, "vm/overcommit_memory"))
	if got := strings.TrimSpace(string(b)); got != "0" {
		t.Errorf("vm.overcommit_memory after the clean-up with the host free: %s, want 0", got)
	}
}

// A run that put the host back leaves nothing of the lock on the machine,
// and the next run takes it afresh.
func TestReleaseLeavesNothingBehind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "csisim-real-nodes")
	l, err := lockHost(context.Background(), dir, "/tmp/a-run", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.keepRecord([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := l.release(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the release: %s is still there (%v)", dir, err)
	}
	next, err := lockHost(context.Background(), dir, "/tmp/next-run", nil)
	if err != nil {
		t.Fatalf("the next run: %v", err)
	}
	// A run that died holding it leaves its record for the next one.
	if err := next.keepRecord([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := next.release(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, hostRecordFile)); err != nil {
		t.Errorf("a release that did not restore removed the record: %v", err)
	}
}
