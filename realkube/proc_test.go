package realkube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProcessNamedAsItsComponent checks that a component runs with its own
// name as argv[0] whatever binary it is started from: the real components
// make their user agent, and so the API server's field manager, from it.
// The process is cat of its own /proc/self/cmdline, which it writes to its
// log.
func TestProcessNamedAsItsComponent(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("kube-controller-manager", "/bin/cat", dir, dir, []string{"/proc/self/cmdline"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.stop(time.Second)
		t.Fatal("cat did not end within a minute")
	}
	log, err := os.ReadFile(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := "kube-controller-manager\x00/proc/self/cmdline\x00"
	if !strings.Contains(string(log), want) {
		t.Errorf("the process's argv, as it saw it: %q; want %q", log, want)
	}
}
