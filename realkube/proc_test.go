package realkube

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestProcessNamedAsItsComponent checks that a component runs with its own
// name as argv[0] whatever binary it is started from: the real components
// make their user agent, and so the API server's field manager, from it.
func TestProcessNamedAsItsComponent(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("kube-controller-manager", "/bin/sleep", dir, dir, []string{"30"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop(time.Second) })
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid()))
	if err != nil {
		t.Fatal(err)
	}
	argv := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	if got := string(argv[0]); got != "kube-controller-manager" {
		t.Errorf("argv[0] = %q, want the component's name kube-controller-manager (argv %q)", got, argv)
	}
}
