package hostpath

import (
	"bytes"
	"strings"
	"testing"
)

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{
			name:     "help",
			args:     []string{"--help"},
			wantCode: 0,
			wantStdout: []string{"--endpoint", "--node-id", "--root", "--state-dir", "--mode",
				"--driver-name", "--max-volumes-per-node", "--zone", "--capacity"},
		},
		{name: "no flags", args: nil, wantCode: 2, wantStderr: []string{"--endpoint is required"}},
		{name: "no root", args: []string{"--endpoint", "unix:///tmp/x.sock"}, wantCode: 2, wantStderr: []string{"--root is required"}},
		{name: "no node id", args: []string{"--endpoint", "unix:///tmp/x.sock", "--root", "/tmp/r"}, wantCode: 2, wantStderr: []string{"--node-id is required"}},
		{name: "bad mode", args: []string{"--mode", "both"}, wantCode: 2, wantStderr: []string{"unknown mode"}},
		{name: "unknown flag", args: []string{"--nodeid", "x"}, wantCode: 2, wantStderr: []string{"nodeid"}},
		{name: "leading subcommand", args: []string{"driver", "--endpoint", "x"}, wantCode: 2, wantStderr: []string{`unexpected argument "driver"`}},
		{name: "bad capacity", args: []string{"--capacity", "lots"}, wantCode: 2, wantStderr: []string{"capacity"}},
		{name: "negative capacity", args: []string{"--capacity", "-1Gi"}, wantCode: 2, wantStderr: []string{"negative"}},
		{name: "bad zone", args: []string{"--endpoint", "unix:///tmp/x.sock", "--root", "/tmp/r", "--node-id", "n", "--zone", "a zone"}, wantCode: 1, wantStderr: []string{"zone"}},
		{name: "root moved by a second flag", args: []string{"--endpoint", "unix:///tmp/x.sock", "--root", "/tmp/run/storage", "--node-id", "n", "--root=/"},
			wantCode: 2, wantStderr: []string{`-root: given twice ("/tmp/run/storage", then "/")`}},
		{name: "state dir moved by a second flag", args: []string{"--state-dir", "/tmp/run/state", "--state-dir", "/etc"},
			wantCode: 2, wantStderr: []string{`-state-dir: given twice`}},
		{name: "endpoint given twice", args: []string{"--endpoint", "unix:///tmp/x.sock", "-endpoint=unix:///tmp/y.sock"},
			wantCode: 2, wantStderr: []string{`-endpoint: given twice`}},
		{name: "bad endpoint", args: []string{"--endpoint", "tcp://x:1", "--root", "/tmp/r", "--mode", "controller"}, wantCode: 1, wantStderr: []string{"only unix sockets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(tc.args, &stdout, &stderr); got != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", got, tc.wantCode, stderr.String())
			}
			for _, s := range tc.wantStdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}
