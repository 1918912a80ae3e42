// Package mock is an in-memory CSI driver: the Identity, Controller and Node
// services with the CSI semantics and error codes of a real plugin, but no
// storage, no mounts and no root. It serves real gRPC on a unix socket, so
// the simulated Kubernetes components and the fault proxy talk to it exactly
// as they talk to any other driver. Every call can be made to take a
// configurable time, to model a slow storage system in scale runs.
package mock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csiendpoint "github.com/csisim/csisim/drivers/endpoint"
)

// DefaultName is the driver name GetPluginInfo reports unless Config says
// otherwise.
const DefaultName = "mock.csisim.io"

// VendorVersion is reported by GetPluginInfo.
const VendorVersion = "0.1.0"

// Mode selects which CSI services a driver serves. Identity is always
// served.
type Mode string

const (
	// ModeAll serves the controller and the node service.
	ModeAll Mode = "all"
	// ModeController serves the controller service only.
	ModeController Mode = "controller"
	// ModeNode serves the node service only.
	ModeNode Mode = "node"
)

func (m Mode) servesController() bool { return m == ModeAll || m == ModeController }
func (m Mode) servesNode() bool       { return m == ModeAll || m == ModeNode }

// Config describes one mock driver.
type Config struct {
	// Name is reported by GetPluginInfo; DefaultName if empty.
	Name string
	// NodeID is the node this driver serves; required when the node
	// service is served.
	NodeID string
	// Mode selects the services to serve; ModeAll if empty.
	Mode Mode
	// Latency is how long each call of a method takes, keyed by the
	// method's name ("CreateVolume") or full name
	// ("/csi.v1.Controller/CreateVolume"). Methods not listed take
	// DefaultLatency, Identity methods included (so give Probe a latency
	// of its own if a readiness check must stay fast). The time passes
	// before the call takes effect, as with a slow storage system; a
	// caller whose deadline ends first gets DeadlineExceeded and nothing
	// changes. SetLatency changes latencies while the driver runs.
	Latency        map[string]time.Duration
	DefaultLatency time.Duration
	// MaxVolumesPerNode is reported by NodeGetInfo and enforced by
	// ControllerPublishVolume; 0 means unlimited. A controller that shares
	// its backend with node drivers enforces each node's own limit.
	MaxVolumesPerNode int64
	// Capacity is the bytes a private backend can provision; 0 means
	// unlimited. It must be 0 when Backend is set: a shared backend has
	// its own capacity.
	Capacity int64
	// Backend is the storage shared with other drivers in this process;
	// nil gives the driver a private one. New registers the driver with
	// it for good: as a controller (so node drivers know which volumes
	// exist and whether to expect ControllerPublishVolume) and as node
	// NodeID (so the controller knows the node and its volume limit).
	Backend *Backend
	// NoStageUnstage leaves out the STAGE_UNSTAGE_VOLUME node capability:
	// NodePublishVolume then needs no NodeStageVolume.
	NoStageUnstage bool
	// NoAttach leaves out the PUBLISH_UNPUBLISH_VOLUME controller
	// capability: node drivers then need no ControllerPublishVolume.
	NoAttach bool
}

// Driver is one mock plugin. Its methods are safe for concurrent use.
type Driver struct {
	cfg     Config
	backend *Backend
	methods map[string]bool
	// latency is replaced as a whole by SetLatency, so that every call
	// reads it without a lock.
	latency atomic.Pointer[latencies]
	// latencyMu serialises SetLatency's copy-and-replace.
	latencyMu sync.Mutex
}

// latencies is an immutable latency table.
type latencies struct {
	byMethod map[string]time.Duration
	def      time.Duration
}

// New validates cfg and returns a driver that is not serving yet; see Start,
// Serve and NewServer.
func New(cfg Config) (*Driver, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeAll
	}
	if !cfg.Mode.servesController() && !cfg.Mode.servesNode() {
		return nil, fmt.Errorf("mock driver: unknown mode %q (want all, controller or node)", cfg.Mode)
	}
	if cfg.Mode.servesNode() && cfg.NodeID == "" {
		return nil, errors.New("mock driver: a node ID is required to serve the node service")
	}
	if cfg.MaxVolumesPerNode < 0 {
		return nil, fmt.Errorf("mock driver: max volumes per node must not be negative, got %d", cfg.MaxVolumesPerNode)
	}
	if cfg.Capacity < 0 {
		return nil, fmt.Errorf("mock driver: capacity must not be negative, got %d", cfg.Capacity)
	}
	if cfg.Backend != nil && cfg.Capacity != 0 {
		return nil, errors.New("mock driver: capacity is set on the shared backend (NewBackend), not on a driver using it")
	}
	if cfg.DefaultLatency < 0 {
		return nil, fmt.Errorf("mock driver: default latency must not be negative, got %s", cfg.DefaultLatency)
	}
	d := &Driver{cfg: cfg, backend: cfg.Backend, methods: csiMethods()}
	if d.backend == nil {
		d.backend = NewBackend(cfg.Capacity)
	}
	lat := &latencies{byMethod: map[string]time.Duration{}, def: cfg.DefaultLatency}
	for m, l := range cfg.Latency {
		name, err := d.methodName(m)
		if err != nil {
			return nil, fmt.Errorf("mock driver: latency: %w", err)
		}
		if l < 0 {
			return nil, fmt.Errorf("mock driver: latency of %s must not be negative, got %s", m, l)
		}
		lat.byMethod[name] = l
	}
	d.latency.Store(lat)
	// Copy the map so that a caller changing theirs cannot reach into the
	// driver through Config().
	d.cfg.Latency = maps.Clone(cfg.Latency)

	if cfg.Mode.servesController() {
		if err := d.backend.attachController(!cfg.NoAttach); err != nil {
			return nil, fmt.Errorf("mock driver: %w", err)
		}
	}
	if cfg.Mode.servesNode() {
		d.backend.registerNode(cfg.NodeID, cfg.MaxVolumesPerNode)
	}
	return d, nil
}

// Config returns the configuration with defaults filled in.
func (d *Driver) Config() Config { return d.cfg }

// Backend returns the storage behind the driver.
func (d *Driver) Backend() *Backend { return d.backend }

// methodName turns a short or full CSI method name into the short one,
// refusing names that are not CSI methods so that a typo does not silently
// leave a method fast.
func (d *Driver) methodName(m string) (string, error) {
	name := path.Base(m)
	if !d.methods[name] || (strings.HasPrefix(m, "/") && !strings.HasPrefix(m, "/csi.v1.")) {
		return "", fmt.Errorf("%q is not a CSI method", m)
	}
	return name, nil
}

// csiMethods lists the short names of the methods of every CSI service.
func csiMethods() map[string]bool {
	out := map[string]bool{}
	svcs := csi.File_csi_proto.Services()
	for i := range svcs.Len() {
		ms := svcs.Get(i).Methods()
		for j := range ms.Len() {
			out[string(ms.Get(j).Name())] = true
		}
	}
	return out
}

// SetLatency changes how long calls of method take from now on; method "*"
// sets the default for methods without a latency of their own. Calls under
// way keep the latency they started with.
func (d *Driver) SetLatency(method string, latency time.Duration) error {
	if latency < 0 {
		return fmt.Errorf("latency of %s must not be negative, got %s", method, latency)
	}
	d.latencyMu.Lock()
	defer d.latencyMu.Unlock()
	old := d.latency.Load()
	next := &latencies{byMethod: maps.Clone(old.byMethod), def: old.def}
	if method == "*" {
		next.def = latency
	} else {
		name, err := d.methodName(method)
		if err != nil {
			return err
		}
		next.byMethod[name] = latency
	}
	d.latency.Store(next)
	return nil
}

// latencyOf returns how long a call of the full method name takes.
func (d *Driver) latencyOf(fullMethod string) time.Duration {
	lat := d.latency.Load()
	if l, ok := lat.byMethod[path.Base(fullMethod)]; ok {
		return l
	}
	return lat.def
}

// intercept refuses the services this driver does not serve and lets the
// configured latency pass before the call takes effect.
func (d *Driver) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch {
	case strings.HasPrefix(info.FullMethod, "/csi.v1.Controller/") && !d.cfg.Mode.servesController():
		return nil, status.Errorf(codes.Unimplemented, "%s: the controller service is not served in %s mode", path.Base(info.FullMethod), d.cfg.Mode)
	case strings.HasPrefix(info.FullMethod, "/csi.v1.Node/") && !d.cfg.Mode.servesNode():
		return nil, status.Errorf(codes.Unimplemented, "%s: the node service is not served in %s mode", path.Base(info.FullMethod), d.cfg.Mode)
	}
	if l := d.latencyOf(info.FullMethod); l > 0 {
		t := time.NewTimer(l)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return handler(ctx, req)
}

// NewServer returns a grpc server with the driver's services registered and
// its interceptor installed, for callers that serve it on a listener of
// their own; opts are added to the driver's.
func (d *Driver) NewServer(opts ...grpc.ServerOption) *grpc.Server {
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.UnaryInterceptor(d.intercept)}, opts...)...)
	csi.RegisterIdentityServer(srv, &identityServer{d: d})
	csi.RegisterControllerServer(srv, &controllerServer{d: d, b: d.backend})
	csi.RegisterNodeServer(srv, &nodeServer{d: d, b: d.backend})
	return srv
}

// Server is a driver serving on a unix socket.
type Server struct {
	endpoint string
	srv      *grpc.Server
	done     chan struct{}
	err      error // set before done is closed
	stopOnce sync.Once
}

// gracefulStopTimeout bounds how long Stop waits for calls under way, which
// with a long configured latency could otherwise keep it waiting.
const gracefulStopTimeout = 2 * time.Second

// Start serves the driver on endpoint (unix:///path or an absolute path)
// until Stop. The socket accepts connections when Start returns.
func (d *Driver) Start(endpoint string) (*Server, error) {
	lis, err := csiendpoint.ListenUnix(endpoint)
	if err != nil {
		return nil, fmt.Errorf("mock driver: %w", err)
	}
	return d.serveOn(lis, endpoint), nil
}

func (d *Driver) serveOn(lis net.Listener, endpoint string) *Server {
	s := &Server{endpoint: endpoint, srv: d.NewServer(), done: make(chan struct{})}
	go func() {
		err := s.srv.Serve(lis)
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.err = fmt.Errorf("mock driver: serve %s: %w", endpoint, err)
		}
		close(s.done)
	}()
	return s
}

// Endpoint is the endpoint the server listens on.
func (s *Server) Endpoint() string { return s.endpoint }

// Done is closed once the server has stopped serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop stops serving, waiting a little for calls under way, and removes the
// socket. It returns the error that ended serving early, if any; stopping
// twice is harmless.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		graceful := make(chan struct{})
		go func() { s.srv.GracefulStop(); close(graceful) }()
		select {
		case <-graceful:
		case <-time.After(gracefulStopTimeout):
			s.srv.Stop()
		}
	})
	<-s.done
	return s.err
}

// Serve serves the driver on endpoint until ctx is done.
func (d *Driver) Serve(ctx context.Context, endpoint string) error {
	s, err := d.Start(endpoint)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	return s.Stop()
}
