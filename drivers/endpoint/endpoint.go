// Package endpoint reads CSI endpoints (unix:///path, unix:/path or a bare
// absolute path) and listens on them, for drivers, proxies and launchers alike.
package endpoint

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MaxSocketPath is the longest path a unix socket can have on Linux: the
// 108 bytes of sun_path in struct sockaddr_un (unix(7)), less the
// terminating NUL.
const MaxSocketPath = 107

// SocketPath returns the socket path of a unix endpoint: unix:///path,
// unix:/path or a bare absolute path. Relative paths are refused because a
// driver and its clients rarely share a working directory.
func SocketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("endpoint is required")
	}
	p := endpoint
	switch {
	case strings.HasPrefix(p, "unix://"):
		p = strings.TrimPrefix(p, "unix://")
	case strings.HasPrefix(p, "unix:"):
		p = strings.TrimPrefix(p, "unix:")
	case strings.Contains(p, "://"):
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported", endpoint)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("endpoint %q: socket path must be absolute", endpoint)
	}
	p = filepath.Clean(p)
	if len(p) > MaxSocketPath {
		return "", fmt.Errorf("endpoint %q: socket path is %d bytes long, over the %d a unix socket path can have", endpoint, len(p), MaxSocketPath)
	}
	return p, nil
}

// DialTarget returns endpoint as a grpc target, unix:///path.
func DialTarget(endpoint string) (string, error) {
	p, err := SocketPath(endpoint)
	if err != nil {
		return "", err
	}
	return "unix://" + p, nil
}

// staleProbeTimeout bounds the dial that tells a live socket from a stale
// one.
const staleProbeTimeout = 200 * time.Millisecond

// ListenUnix listens on endpoint's socket, creating its directory. A socket
// left behind by an earlier process is replaced, so a restarted driver or
// proxy can come back on the same path; a socket something still answers on,
// or a path that is not a socket, is refused rather than clobbered.
func ListenUnix(endpoint string) (net.Listener, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("endpoint %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, staleProbeTimeout); err == nil {
			c.Close()
			return nil, fmt.Errorf("endpoint %s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return lis, nil
}
