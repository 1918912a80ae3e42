package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A node name that the scenario parser let through (a shorter temporary
// directory when it loaded) still cannot make a socket path too long: the
// cluster refuses it before starting a driver on it, and leaves nothing.
func TestStartRefusesASocketPathTooLong(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err := Start(context.Background(), Config{Nodes: []string{strings.Repeat("n", 63)}, Mock: true, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "plugin socket") || !strings.Contains(err.Error(), "over the 107 a unix socket path can have") {
		t.Fatalf("Start = %v, want the socket path refused", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("the failed start left %v", left)
	}
	_ = os.Remove(tmp)
}
