package endpoint

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPathAndDialTarget(t *testing.T) {
	for _, tc := range []struct {
		endpoint   string
		wantPath   string
		wantTarget string
		wantErr    string
	}{
		{endpoint: "unix:///run/csi/csi.sock", wantPath: "/run/csi/csi.sock", wantTarget: "unix:///run/csi/csi.sock"},
		{endpoint: "unix:/run/csi/../csi.sock", wantPath: "/run/csi.sock", wantTarget: "unix:///run/csi.sock"},
		{endpoint: "/run/csi.sock", wantPath: "/run/csi.sock", wantTarget: "unix:///run/csi.sock"},
		{endpoint: "", wantErr: "endpoint is required"},
		{endpoint: "tcp://127.0.0.1:10000", wantErr: "only unix sockets"},
		{endpoint: "unix://csi.sock", wantErr: "must be absolute"},
		{endpoint: "csi.sock", wantErr: "must be absolute"},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			p, err := SocketPath(tc.endpoint)
			target, terr := DialTarget(tc.endpoint)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("SocketPath error = %v, want %q", err, tc.wantErr)
				}
				if terr == nil {
					t.Fatalf("DialTarget accepted %q", tc.endpoint)
				}
				return
			}
			if err != nil || terr != nil {
				t.Fatalf("errors: %v, %v", err, terr)
			}
			if p != tc.wantPath || target != tc.wantTarget {
				t.Fatalf("got %q, %q; want %q, %q", p, target, tc.wantPath, tc.wantTarget)
			}
		})
	}
}

func TestListenUnixReplacesStaleSocketOnly(t *testing.T) {
	dir, err := os.MkdirTemp("", "launch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	// A stale socket: bound, then its listener gone without unlinking.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	lis, err := ListenUnix("unix://" + stale)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	defer lis.Close()

	// A live socket: the one just opened.
	if _, err := ListenUnix(stale); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("live socket: got %v, want an in-use error", err)
	}

	// Not a socket at all.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file: got %v, want a not-a-socket error", err)
	}

	// A missing directory is created.
	nested := filepath.Join(dir, "a", "b", "csi.sock")
	lis2, err := ListenUnix(nested)
	if err != nil {
		t.Fatalf("nested: %v", err)
	}
	lis2.Close()
}
