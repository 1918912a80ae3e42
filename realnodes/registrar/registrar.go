// Package registrar registers a CSI driver's node plugin with a real
// kubelet, as the node-driver-registrar sidecar does: it serves the
// kubelet's plugin registration API (pluginregistration v1) on a socket in
// the kubelet's plugins_registry directory, which the kubelet's plugin
// watcher notices. The kubelet then asks the socket who it is (GetInfo),
// validates and registers the driver — dialling the driver's own endpoint
// for NodeGetInfo and writing the CSINode object — and says how that went
// (NotifyRegistrationStatus).
//
// What the kubelet (v1.37) expects and does, which Serve follows:
//   - The socket's name must not start with "." (the watcher ignores such
//     files); by convention it is <driver>-reg.sock.
//   - Type must be "CSIPlugin", the endpoint a plain socket path (the
//     kubelet dials it as a unix address, no unix:// scheme), and the
//     versions must include a 1.x: the kubelet refuses an empty list and
//     any driver of the same name already registered with the same or a
//     higher version.
//   - The kubelet keeps the registration while the socket file exists, and
//     deregisters the driver when it is removed; a socket replaced at the
//     same path is deregistered and registered again. So Serve removes its
//     socket when it stops, and only if it is still its own.
//   - A failed registration is retried by the kubelet, with exponential
//     backoff, for as long as the socket exists.
//
// On a failed registration node-driver-registrar exits, so that its
// container restarts and the kubelet sees a new socket. Serve logs the
// kubelet's error and keeps serving instead: the kubelet retries on its
// own, and a registrar run as a process of csisim's has nobody to restart
// it, so exiting would end the retries rather than start one.
package registrar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/csisim/csisim/drivers/endpoint"
)

// DefaultRegistrationDir is where a kubelet with the default root
// directory (/var/lib/kubelet) watches for plugin registration sockets.
const DefaultRegistrationDir = "/var/lib/kubelet/plugins_registry"

// DefaultVersions are the CSI versions reported when Config.Versions is
// empty, as node-driver-registrar reports them.
var DefaultVersions = []string{"1.0.0"}

// Config says what to register and where.
type Config struct {
	// DriverName is the CSI driver's name, as its GetPluginInfo reports it.
	DriverName string
	// Endpoint is the path of the CSI socket the kubelet should dial, an
	// absolute path as the kubelet sees it (unix:///path is accepted and
	// given to the kubelet as /path).
	Endpoint string
	// Versions are the CSI versions the driver supports; DefaultVersions
	// if empty.
	Versions []string
	// Socket is the registration socket to serve, in
	// <kubelet root>/plugins_registry/<driver>-reg.sock (see SocketPath).
	Socket string
}

// SocketPath is the conventional registration socket of driver in the
// kubelet's registration directory dir.
func SocketPath(dir, driver string) string {
	return filepath.Join(dir, driver+"-reg.sock")
}

// stopGrace bounds how long Serve waits for calls under way when it stops.
const stopGrace = 5 * time.Second

// Serve serves the registration of cfg's driver on cfg.Socket until ctx is
// done, logging every call of the kubelet's to log, and removes the socket
// on exit. A socket left at cfg.Socket by a registrar that died is
// replaced; one a live process still answers on is not.
func Serve(ctx context.Context, cfg Config, log io.Writer) error {
	if cfg.DriverName == "" {
		return errors.New("registrar: driver name is required")
	}
	info, err := cfg.pluginInfo()
	if err != nil {
		return fmt.Errorf("registrar for %s: %w", cfg.DriverName, err)
	}
	lis, err := endpoint.ListenUnix(cfg.Socket)
	if err != nil {
		return fmt.Errorf("registrar for %s: %w", cfg.DriverName, err)
	}
	// The listener would unlink its path when it closes, whoever's
	// socket is there by then; remove does it only for our own.
	if ul, ok := lis.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	own, err := os.Lstat(cfg.Socket)
	if err != nil {
		lis.Close()
		return fmt.Errorf("registrar for %s: %w", cfg.DriverName, err)
	}
	// remove says what became of the socket, for the log.
	remove := func() (string, error) {
		if cur, err := os.Lstat(cfg.Socket); err != nil || !os.SameFile(cur, own) {
			return "socket gone already or replaced by another's, left alone", nil
		}
		if err := os.Remove(cfg.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("registrar for %s: removing socket: %w", cfg.DriverName, err)
		}
		return "socket removed", nil
	}

	lg := newLogger(log, cfg.DriverName)
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &server{info: info, log: lg})
	lg.Printf("serving registration on %s: CSI endpoint %s, versions %s", cfg.Socket, info.Endpoint, strings.Join(info.SupportedVersions, ","))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// The socket goes first: its removal is what makes the kubelet
	// deregister the driver, and what keeps it from dialling a registrar
	// that is going away.
	removed, rmErr := remove()
	stop(srv)
	if serveErr == nil {
		serveErr = <-served
	}
	if serveErr != nil && !errors.Is(serveErr, grpc.ErrServerStopped) {
		serveErr = fmt.Errorf("registrar for %s: serving %s: %w", cfg.DriverName, cfg.Socket, serveErr)
	} else {
		serveErr = nil
	}
	if rmErr == nil {
		lg.Printf("stopped; %s: %s", removed, cfg.Socket)
	}
	return errors.Join(serveErr, rmErr)
}

// stop lets calls under way finish, for a while.
func stop(srv *grpc.Server) {
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		srv.Stop()
		<-done
	}
}

func newLogger(w io.Writer, driver string) *log.Logger {
	if w == nil {
		w = io.Discard
	}
	return log.New(w, "registrar "+driver+": ", log.Lmsgprefix|log.Ltime|log.Lmicroseconds)
}

// server is the Registration service: the kubelet's plugin watcher is its
// only client.
type server struct {
	registerapi.UnimplementedRegistrationServer
	info *registerapi.PluginInfo // never changed once serving
	log  *log.Logger
}

func (s *server) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	s.log.Printf("GetInfo: answering type %s, name %s, endpoint %s, versions %s", s.info.Type, s.info.Name, s.info.Endpoint, strings.Join(s.info.SupportedVersions, ","))
	return s.info, nil
}

func (s *server) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		s.log.Printf("NotifyRegistrationStatus: the kubelet registered driver %s", s.info.Name)
	} else {
		// Kept serving: see the package comment.
		s.log.Printf("NotifyRegistrationStatus: the kubelet failed to register driver %s: %s (it retries, with backoff, while the registration socket exists)", s.info.Name, st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// pluginInfo checks cfg, which has a driver name, and returns what GetInfo
// answers.
func (cfg Config) pluginInfo() (*registerapi.PluginInfo, error) {
	if strings.ContainsRune(cfg.DriverName, '/') {
		return nil, fmt.Errorf("driver name %q: must not contain /", cfg.DriverName)
	}
	ep, err := endpoint.SocketPath(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("CSI endpoint: %w", err)
	}
	if cfg.Socket == "" || !filepath.IsAbs(cfg.Socket) {
		return nil, fmt.Errorf("registration socket %q: want an absolute path", cfg.Socket)
	}
	if strings.HasPrefix(filepath.Base(cfg.Socket), ".") {
		return nil, fmt.Errorf("registration socket %s: the kubelet ignores files whose name starts with \".\"", cfg.Socket)
	}
	versions := cfg.Versions
	if len(versions) == 0 {
		versions = DefaultVersions
	}
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              cfg.DriverName,
		Endpoint:          ep,
		SupportedVersions: append([]string(nil), versions...),
	}, nil
}
