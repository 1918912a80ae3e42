package registrar

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// serve runs Serve in the background until the returned stop is called,
// which returns Serve's error. Serve has returned by then, so log may be
// read without a lock.
func serve(t *testing.T, cfg Config, log io.Writer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, cfg, log) }()
	// Serving once the socket answers, or failed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.Dial("unix", cfg.Socket); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-served:
			cancel()
			t.Fatalf("Serve returned before serving: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("registration socket did not answer within 5s")
		}
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-served })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// dial connects to the registration socket the way the kubelet's plugin
// watcher does: a plain unix path.
func dial(t *testing.T, socket string) registerapi.RegistrationClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return registerapi.NewRegistrationClient(conn)
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		DriverName: "hostpath.csisim.io",
		Endpoint:   "unix:///var/lib/kubelet/plugins/hostpath.csisim.io/csi.sock",
		Socket:     SocketPath(dir, "hostpath.csisim.io"),
	}
	if want := filepath.Join(dir, "hostpath.csisim.io-reg.sock"); cfg.Socket != want {
		t.Fatalf("SocketPath = %s, want %s", cfg.Socket, want)
	}
	var log bytes.Buffer
	stop := serve(t, cfg, &log)
	client := dial(t, cfg.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	info, err := client.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != cfg.DriverName ||
		info.Endpoint != "/var/lib/kubelet/plugins/hostpath.csisim.io/csi.sock" || !slices.Equal(info.SupportedVersions, []string{"1.0.0"}) {
		t.Errorf("GetInfo = %v; want CSIPlugin %s at the endpoint's plain path, versions [1.0.0]", info, cfg.DriverName)
	}
	if _, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("NotifyRegistrationStatus(registered): %v", err)
	}
	const refusal = "Another driver with the same name is already registered"
	if _, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: refusal}); err != nil {
		t.Fatalf("NotifyRegistrationStatus(failed): %v", err)
	}
	// Still serving after a failed registration: the kubelet retries.
	if _, err := client.GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Fatalf("GetInfo after a failed registration: %v", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(cfg.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("registration socket after Serve returned: %v, want it removed", err)
	}
	for _, want := range []string{
		"registrar hostpath.csisim.io: serving registration on " + cfg.Socket,
		"GetInfo: answering type CSIPlugin, name hostpath.csisim.io, endpoint /var/lib/kubelet/plugins/hostpath.csisim.io/csi.sock, versions 1.0.0",
		"NotifyRegistrationStatus: the kubelet registered driver hostpath.csisim.io",
		"NotifyRegistrationStatus: the kubelet failed to register driver hostpath.csisim.io: " + refusal,
		"stopped; socket removed: " + cfg.Socket,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

func TestServeVersions(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DriverName: "d", Endpoint: "/csi.sock", Versions: []string{"1.5.0", "1.13.0"}, Socket: SocketPath(dir, "d")}
	serve(t, cfg, nil)
	info, err := dial(t, cfg.Socket).GetInfo(context.Background(), &registerapi.InfoRequest{})
	if err != nil || !slices.Equal(info.SupportedVersions, cfg.Versions) {
		t.Fatalf("GetInfo = %v, %v; want versions %q", info, err, cfg.Versions)
	}
}

func TestServeSocketOwnership(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DriverName: "d", Endpoint: "/csi.sock", Socket: SocketPath(dir, "d")}

	// A socket a dead registrar left is taken over.
	l, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	var log bytes.Buffer
	stop := serve(t, cfg, &log)

	// One that answers is not.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Serve(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second Serve on a live socket: %v, want it refused as in use", err)
	}

	// A socket another registrar put in its place since is left alone
	// when the first stops.
	if err := os.Remove(cfg.Socket); err != nil {
		t.Fatal(err)
	}
	other, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(cfg.Socket); err != nil {
		t.Fatalf("the newer registrar's socket: %v, want it kept", err)
	}
	if want := "stopped; socket gone already or replaced by another's, left alone: " + cfg.Socket; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
}

func TestServeRefusesConfig(t *testing.T) {
	dir := t.TempDir()
	sock := SocketPath(dir, "d")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no driver name", Config{Endpoint: "/csi.sock", Socket: sock}, "driver name is required"},
		{"slash in driver name", Config{DriverName: "a/b", Endpoint: "/csi.sock", Socket: sock}, "must not contain /"},
		{"no endpoint", Config{DriverName: "d", Socket: sock}, "endpoint is required"},
		{"relative endpoint", Config{DriverName: "d", Endpoint: "csi.sock", Socket: sock}, "must be absolute"},
		{"tcp endpoint", Config{DriverName: "d", Endpoint: "tcp://127.0.0.1:1", Socket: sock}, "only unix sockets"},
		{"no socket", Config{DriverName: "d", Endpoint: "/csi.sock"}, "want an absolute path"},
		{"relative socket", Config{DriverName: "d", Endpoint: "/csi.sock", Socket: "d-reg.sock"}, "want an absolute path"},
		{"hidden socket", Config{DriverName: "d", Endpoint: "/csi.sock", Socket: filepath.Join(dir, ".d-reg.sock")}, "kubelet ignores"},
		{"socket over a file", Config{DriverName: "d", Endpoint: "/csi.sock", Socket: filepath.Join(dir, "file")}, "not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := Serve(ctx, tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
