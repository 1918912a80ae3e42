package livenessprobe

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identity answers Probe as told.
type identity struct {
	csi.UnimplementedIdentityServer
	ready *wrapperspb.BoolValue
	err   error
}

func (i *identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if i.err != nil {
		return nil, i.err
	}
	return &csi.ProbeResponse{Ready: i.ready}, nil
}

func serveIdentity(t *testing.T, id *identity) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "csi.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, id)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return sock
}

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       *identity // nil: nothing listens
		code     int
		bodyPart string
	}{
		{"ready", &identity{ready: wrapperspb.Bool(true)}, http.StatusOK, "ok"},
		{"no ready field counts as ready", &identity{}, http.StatusOK, "ok"},
		{"not ready", &identity{ready: wrapperspb.Bool(false)}, http.StatusInternalServerError, notReady},
		{"probe fails", &identity{err: status.Error(codes.FailedPrecondition, "disk gone")}, http.StatusInternalServerError, "disk gone"},
		{"no driver", nil, http.StatusInternalServerError, "probe the CSI driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := filepath.Join(t.TempDir(), "none.sock")
			if tc.id != nil {
				addr = "unix://" + serveIdentity(t, tc.id)
			}
			srv := httptest.NewServer(Handler(addr, time.Second, io.Discard))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.bodyPart) {
				t.Errorf("GET /healthz: %d %q, want %d with %q", resp.StatusCode, body, tc.code, tc.bodyPart)
			}
		})
	}
}

// TestServe serves until the context ends.
func TestServe(t *testing.T) {
	sock := serveIdentity(t, &identity{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, sock, time.Second, io.Discard) }()
	var resp *http.Response
	for i := 0; i < 100; i++ {
		if resp, err = http.Get("http://" + addr + "/healthz"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
