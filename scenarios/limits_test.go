package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/endpoint"
)

// Load-time limits: each a file:line error, none a hang or a huge read.
func TestLimits(t *testing.T) {
	// The socket path depends on the temporary directory a run uses.
	t.Setenv("TMPDIR", "/tmp")
	longest := strings.Repeat("n", endpoint.MaxSocketPath-len(nodePluginSocket(runRootSample(), "n", defaultDriverName))+1)
	manifest := "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(manifest+"# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		want []string // file:line prefix, then substrings; none: no error
	}{
		{name: "longest node name that fits", src: "cluster: {nodes: [" + longest + "]}\nsteps:\n  - sleep: 1s\n"},
		{name: "node name one too long for the socket path", src: "cluster:\n  nodes:\n    - " + longest + "x\n",
			want: []string{"x.yaml:3:", "makes the node plugin's socket path 108 bytes long", "over the 107", fmt.Sprintf("at most %d characters", len(longest))}},
		{name: "node name not a DNS subdomain", src: "cluster:\n  nodes: [Node_1]\n", want: []string{"x.yaml:2:", `invalid node name "Node_1"`}},
		{name: "manifest is a directory", src: "steps:\n  - apply: {file: " + filepath.Join(dir, "adir") + "}\n", want: []string{"x.yaml:2:", "is a directory, not a regular file"}},
		{name: "manifest is a FIFO", src: "steps:\n  - apply: {file: " + fifo + "}\n", want: []string{"x.yaml:2:", "is a named pipe (FIFO), not a regular file"}},
		{name: "manifest is /dev/zero", src: "steps:\n  - apply: {file: /dev/zero}\n", want: []string{"x.yaml:2:", "/dev/zero is a character device, not a regular file"}},
		{name: "manifest over the size limit", src: "steps:\n  - apply: {file: " + big + "}\n", want: []string{"x.yaml:2:", "16.0 MiB, over the 16 MiB limit"}},
		{name: "driverArgs may tune the driver", src: "cluster:\n  nodes: [n1]\n  driverArgs: [--capacity=2Gi, --max-volumes-per-node=3]\nsteps:\n  - sleep: 1s\n"},
		{name: "driverArgs cannot move the root", src: "cluster:\n  nodes: [n1]\n  driverArgs:\n    - --capacity=2Gi\n    - --root=/\n",
			want: []string{"x.yaml:5:", `driver argument "--root=/": csisim sets --root for each plugin (the run's storage directory)`}},
		{name: "driverArgs cannot move the state", src: "cluster:\n  nodes: [n1]\n  driverArgs: [--state-dir, /etc]\n",
			want: []string{"x.yaml:3:", `driver argument "--state-dir": csisim sets --state-dir`}},
		{name: "driverArgs cannot move the socket", src: "cluster:\n  nodes: [n1]\n  driverArgs: [--endpoint=unix:///run/x.sock]\n",
			want: []string{"x.yaml:3:", `csisim sets --endpoint`}},
		{name: "driverName", src: "cluster:\n  nodes: [n1]\n  driverName: ceph2.csi.strato.example.com\nsteps:\n  - sleep: 1s\n"},
		{name: "driverName without nodes", src: "cluster:\n  driverName: ceph2.csi.strato.example.com\nsteps:\n  - sleep: 1s\n"},
		{name: "driverName not a DNS subdomain", src: "cluster:\n  nodes: [n1]\n  driverName: Ceph_CSI\n", want: []string{"x.yaml:3:", `invalid driverName "Ceph_CSI"`}},
		{name: "driverName over 63 characters", src: "cluster:\n  driverName: " + strings.Repeat("d", 64) + "\n", want: []string{"x.yaml:2:", "must be no more than 63 characters"}},
		{name: "a longer driverName makes the longest node name too long", src: "cluster:\n  driverName: " + defaultDriverName + "x\n  nodes: [" + longest + "]\n",
			want: []string{"x.yaml:3:", "makes the node plugin's socket path 108 bytes long"}},
		{name: "driverArgs cannot name the driver", src: "cluster:\n  nodes: [n1]\n  driverArgs: [--driver-name=x.example.com]\n",
			want: []string{"x.yaml:3:", "from cluster.driverName"}},
		{name: "wait timeout of a day", src: "steps:\n  - wait: {object: pod/a, gone: true, timeout: 24h}\n"},
		{name: "wait timeout over a day", src: "steps:\n  - wait: {object: pod/a, gone: true, timeout: 25h}\n", want: []string{"x.yaml:2:", "timeout 25h0m0s is longer than 24h0m0s"}},
		{name: "sleep over a day", src: "steps:\n  - sleep: 1000h\n", want: []string{"x.yaml:2:", "sleep 1000h0m0s is longer than 24h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Parse("x.yaml", []byte(tt.src), dir)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("parsing hangs")
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var perrs ParseErrors
			if !errors.As(err, &perrs) {
				t.Fatalf("error is %T, want ParseErrors: %v", err, err)
			}
			for _, pe := range perrs {
				if msg := pe.Error(); strings.HasPrefix(msg, tt.want[0]) {
					for _, w := range tt.want[1:] {
						if !strings.Contains(msg, w) {
							t.Errorf("error %q does not contain %q", msg, w)
						}
					}
					return
				}
			}
			t.Errorf("no error at %s; got:\n%v", tt.want[0], err)
		})
	}
}

// The scenario file itself is read under the same rules.
func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "s.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", t.TempDir()} {
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(%s) = %v, want a not-a-regular-file error", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) hangs", path)
		}
	}
}
