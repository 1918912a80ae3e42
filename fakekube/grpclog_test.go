package fakekube

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/grpc/grpclog"
)

func TestGRPCDefaultLogger(t *testing.T) {
	tests := []struct {
		severity string
		want     []string // what of "error", "warning", "info" is written
	}{
		{"", []string{"error"}},
		{"ERROR", []string{"error"}},
		{"warning", []string{"error", "warning"}},
		{"INFO", []string{"error", "warning", "info"}},
	}
	for _, tt := range tests {
		var b strings.Builder
		l := grpcDefaultLogger(tt.severity, "", &b)
		l.Error("error")
		l.Warning("warning")
		l.Info("info")
		for _, level := range []string{"error", "warning", "info"} {
			want := false
			for _, w := range tt.want {
				want = want || w == level
			}
			if got := strings.Contains(b.String(), " "+level+"\n"); got != want {
				t.Errorf("severity %q: %s written = %v, want %v; log:\n%s", tt.severity, level, got, want, b.String())
			}
		}
	}
}

// TestGRPCWarningsAreNotWritten runs this test binary again to log a gRPC
// warning, which must not reach stderr: it fails when a dependency's init
// has left gRPC logging through klog, which writes warnings there.
func TestGRPCWarningsAreNotWritten(t *testing.T) {
	if os.Getenv("FAKEKUBE_GRPCLOG_PROBE") == "1" {
		grpclog.Warning("probe warning")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGRPCWarningsAreNotWritten$")
	cmd.Env = append(os.Environ(), "FAKEKUBE_GRPCLOG_PROBE=1", "GRPC_GO_LOG_SEVERITY_LEVEL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(string(out), "probe warning") {
		t.Errorf("a gRPC warning was written:\n%s", out)
	}
}
