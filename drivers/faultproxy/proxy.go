// Package faultproxy is a fault-injecting gRPC proxy between a CSI client
// (the simulated sidecars and kubelet, or real ones) and a CSI driver's
// unix socket. It forwards every call of every service, and fails, delays,
// hangs, drops or answers chosen calls by rules that can change while it
// runs. It keeps no record of the calls: the run's timeline (package
// trace) is the one record, which the rules that fire write Fault entries
// to, and which Config.OnCall can put the calls of clients csisim does not
// control (a real sidecar) in.
//
// The proxy forwards the raw request and response bytes, so nothing it does
// not understand (fields of a newer spec, methods it has never heard of) is
// lost, and decodes a copy of each request into its CSI message type to
// read the volume, node and paths that rules match on and the timeline
// needs. Responses are only decoded for the few methods whose answers say
// something the timeline needs: CreateVolume (the new volume's ID),
// NodeGetInfo (the node ID) and the capability calls.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/endpoint"
	"github.com/csisim/csisim/trace"
)

// DefaultName names a proxy whose Config has no name.
const DefaultName = "faultproxy"

// Config describes one proxy.
type Config struct {
	// Name tells this proxy's faults from others' in the timeline;
	// DefaultName if empty.
	Name string
	// Listen is the endpoint the proxy serves on, Target the driver's:
	// unix:///path or an absolute path.
	Listen, Target string
	// Seed seeds the generators of probabilistic rules.
	Seed uint64
	// NodeID is the node of the node plugin behind the proxy, which rules
	// match node service calls by and Call.NodeID names. If empty, the
	// proxy learns it from the NodeGetInfo answers that pass through.
	NodeID string
	// Rules are in force from the start.
	Rules []Rule
	// Recorder, if set, receives a Fault entry whenever a rule fires.
	Recorder *trace.Recorder
	// OnCall, if set, is called with every call once it has finished, in
	// the order calls finish, so that a caller can put the calls of
	// clients it does not control (a real sidecar) in a timeline.
	OnCall func(Call)
	// Park, if set, is how delays and hangs pass for calls whose caller
	// lives on a virtual clock and says so by sending its timeout in
	// TimeoutHeader (a simulation's components): the time passes on that
	// clock, and the caller's timeout is measured on it too. Other calls
	// wait in wall time, with the caller's own deadline. See ParkFunc.
	Park ParkFunc
	// Crash, if set, kills the driver behind the proxy and starts it
	// again, as its owner restarts a crashed driver; a crash rule
	// (ActionCrash) calls it once the driver has answered, before the
	// answer goes on. Without it, crash rules are refused.
	Crash func() error
}

// ParkFunc lets d pass on a virtual clock (d <= 0: until interrupted):
// wait blocks until then and reports whether d passed (false: interrupted);
// interrupt ends the wait early. sim/loop's Park is one.
type ParkFunc func(d time.Duration) (wait func() bool, interrupt func())

// TimeoutHeader is the gRPC metadata key in which a caller on a virtual
// clock sends its timeout for the call (a Go duration, "2m0s"): its gRPC
// deadline is wall time and means nothing on that clock. The proxy
// measures delays and hangs against it on Config.Park's clock, and bounds
// the driver's own answer by it in wall time, so that a driver that
// really hangs costs at most that much. The proxy does not pass it on.
const TimeoutHeader = "csisim-timeout"

// CallerHeader is the gRPC metadata key in which a caller on a virtual
// clock names itself (one run of a simulated component's process), so
// that InterruptParkedOf can cut off its parked calls when it exits. The
// proxy does not pass it on.
const CallerHeader = "csisim-caller"

// Proxy is a running proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg     Config
	methods map[string]*methodInfo
	names   map[string]bool
	lis     *trackingListener
	srv     *grpc.Server
	target  *grpc.ClientConn

	// stopping is closed when Stop begins, ending delays and hangs.
	stopping chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	serveErr error // set before done is closed

	nodeID atomic.Pointer[string]

	rulesMu  sync.Mutex
	rules    []*ruleState
	nextRule int

	// parks are the interrupts of calls parked on the virtual clock, so
	// that Stop can end them as it ends wall-time waits.
	parksMu  sync.Mutex
	parks    map[int]parkedCall
	nextPark int
	stopped  bool
}

// reconnectDelay is the longest the proxy waits before dialling the driver
// again after failing to; short, because a restarted driver should be
// reachable through the proxy as soon as it is up.
const reconnectDelay = 200 * time.Millisecond

// windowSize is the HTTP/2 flow control window on both sides of the proxy.
// Setting it turns off grpc's bandwidth estimation, whose pings cost
// latency on every call and buy nothing on a unix socket.
const windowSize = 1 << 20

// Start serves the proxy on cfg.Listen, forwarding to cfg.Target, until
// Stop or until ctx is done. The driver need not be up yet: calls fail
// with Unavailable until it is, as they would without the proxy.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	target, err := endpoint.DialTarget(cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy %s: target: %w", cfg.Name, err)
	}
	if _, err := endpoint.SocketPath(cfg.Listen); err != nil {
		return nil, fmt.Errorf("faultproxy %s: listen: %w", cfg.Name, err)
	}
	methods, err := csiMethods()
	if err != nil {
		return nil, fmt.Errorf("faultproxy %s: %w", cfg.Name, err)
	}
	p := &Proxy{
		cfg:      cfg,
		methods:  methods,
		names:    methodNames(),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
	node := cfg.NodeID
	p.nodeID.Store(&node)
	if err := p.SetRules(cfg.Rules...); err != nil {
		return nil, fmt.Errorf("faultproxy %s: %w", cfg.Name, err)
	}

	p.target, err = grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(windowSize), grpc.WithInitialConnWindowSize(windowSize),
		// MinConnectTimeout too: without it grpc-go bounds a connection
		// attempt by the current backoff step (20 ms at first), which a
		// loaded machine misses, and the first call fails as if the driver
		// were down.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: reconnectDelay,
		}, MinConnectTimeout: minConnectTimeout}))
	if err != nil {
		return nil, fmt.Errorf("faultproxy %s: connect to %s: %w", cfg.Name, cfg.Target, err)
	}
	lis, err := endpoint.ListenUnix(cfg.Listen)
	if err != nil {
		p.target.Close()
		return nil, fmt.Errorf("faultproxy %s: %w", cfg.Name, err)
	}
	p.lis = &trackingListener{Listener: lis, conns: map[uint64]*trackedConn{}}
	// No services are registered: every call, of any service, reaches
	// the unknown-service handler, in raw bytes.
	p.srv = grpc.NewServer(grpc.UnknownServiceHandler(p.handle), grpc.ForceServerCodecV2(rawCodec{}),
		grpc.InitialWindowSize(windowSize), grpc.InitialConnWindowSize(windowSize),
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))))
	go func() {
		err := p.srv.Serve(p.lis)
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			p.serveErr = fmt.Errorf("faultproxy %s: serve %s: %w", cfg.Name, cfg.Listen, err)
		}
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.Stop()
		case <-p.done:
		}
	}()
	return p, nil
}

// Name is the proxy's name.
func (p *Proxy) Name() string { return p.cfg.Name }

// Endpoint is the endpoint the proxy listens on.
func (p *Proxy) Endpoint() string { return p.cfg.Listen }

// Target is the driver endpoint the proxy forwards to.
func (p *Proxy) Target() string { return p.cfg.Target }

// minConnectTimeout is grpc-go's own default for an attempt to connect.
const minConnectTimeout = 20 * time.Second

// stopTimeout bounds how long Stop waits for calls under way.
const stopTimeout = 2 * time.Second

// Stop ends delays and hangs (their callers get Unavailable), stops
// serving, closes the connection to the driver and removes the socket. It
// returns the error that ended serving early, if any; stopping twice is
// harmless.
func (p *Proxy) Stop() error {
	p.stopOnce.Do(func() {
		close(p.stopping)
		p.parksMu.Lock()
		p.stopped = true
		for _, pc := range p.parks {
			pc.interrupt()
		}
		p.parksMu.Unlock()
		graceful := make(chan struct{})
		go func() { p.srv.GracefulStop(); close(graceful) }()
		select {
		case <-graceful:
		case <-time.After(stopTimeout):
			p.srv.Stop()
		}
		p.target.Close()
	})
	<-p.done
	return p.serveErr
}

// WaitConnected waits until the proxy's connection to the driver is up,
// after the driver has (re)started: a connection that failed while the
// driver was down retries with a backoff, and the calls sent before it
// does fail as if the driver were still down. It ends that backoff.
func (p *Proxy) WaitConnected(ctx context.Context) error {
	p.target.ResetConnectBackoff()
	for {
		state := p.target.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			p.target.Connect()
		}
		if !p.target.WaitForStateChange(ctx, state) {
			return fmt.Errorf("faultproxy %s: connecting to %s: %w (last state %s)", p.cfg.Name, p.cfg.Target, ctx.Err(), state)
		}
	}
}

// WaitDisconnected waits until the proxy's connection to the driver has
// seen the driver go, after it was killed: its state is no longer Ready.
// A call forwarded before that can go out on the dead connection and fail
// with "error reading from server: EOF", one after it dials again and
// finds no socket; which of the two a caller sees must not depend on how
// soon the proxy read the end of the connection (late, on a loaded
// machine), or the same seed would write a different timeline.
func (p *Proxy) WaitDisconnected(ctx context.Context) error {
	for {
		state := p.target.GetState()
		if state != connectivity.Ready {
			return nil
		}
		if !p.target.WaitForStateChange(ctx, state) {
			return fmt.Errorf("faultproxy %s: the connection to %s stays up after the driver went: %w", p.cfg.Name, p.cfg.Target, ctx.Err())
		}
	}
}

// currentNodeID is the node of node service calls.
func (p *Proxy) currentNodeID() string { return *p.nodeID.Load() }

// handle serves one call of any method.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	start := time.Now()
	full, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "faultproxy: call without a method name")
	}
	c := &Call{Method: shortName(full), FullMethod: full}
	var err error
	if info := p.methods[full]; info != nil && !info.streaming {
		err = p.unary(ss, c, info)
	} else {
		err = p.stream(ss, c, info)
	}
	c.Duration = time.Since(start)
	if err != nil {
		st := status.Convert(err)
		c.Code, c.Message = st.Code(), st.Message()
		if c.Code == codes.Canceled && deadlinePassed(ss.Context()) {
			c.Code, c.Message = codes.DeadlineExceeded, "the caller's deadline passed"
		}
	}
	if p.cfg.OnCall != nil {
		p.cfg.OnCall(*c)
	}
	return err
}

// deadlineSlack is how close to its deadline a cancelled call counts as
// timed out: the proxy's copy of the deadline is late by the time the
// request took to arrive, which on a loaded machine can be milliseconds.
const deadlineSlack = 50 * time.Millisecond

// deadlinePassed reports whether a call's deadline has (as good as) passed.
// A caller whose deadline passes resets the stream, which the proxy sees as
// a cancellation a moment before its own copy of the deadline, shifted by
// the transit time, passes; the call should say what the caller saw.
func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < deadlineSlack
}

// unary serves a call of a unary CSI method.
func (p *Proxy) unary(ss grpc.ServerStream, c *Call, info *methodInfo) error {
	ctx := ss.Context()
	var req []byte
	if err := ss.RecvMsg(&req); err != nil {
		return err
	}
	describeRequest(c, info, req, p.currentNodeID())
	act := p.pick(c)
	resp, err := p.execute(ctx, c, info, act, func() ([]byte, error) {
		c.Forwarded = true
		return p.invoke(ctx, ss, c.FullMethod, req)
	})
	if err != nil {
		return err
	}
	if err := ss.SendMsg(&resp); err != nil {
		return err
	}
	if node := describeResponse(c, info, resp); node != "" && p.cfg.NodeID == "" {
		p.nodeID.Store(&node)
	}
	return nil
}

// stream serves a call of a streaming CSI method, or of a method the proxy
// does not know (which may stream), by pumping messages both ways. Rules
// match it by method and node only: the proxy does not read its messages.
func (p *Proxy) stream(ss grpc.ServerStream, c *Call, info *methodInfo) error {
	ctx := ss.Context()
	describeRequest(c, info, nil, p.currentNodeID())
	act := p.pick(c)
	resp, err := p.execute(ctx, c, info, act, func() ([]byte, error) {
		c.Forwarded = true
		return nil, p.pump(ctx, ss, c.FullMethod)
	})
	if err != nil {
		return err
	}
	// Only an ok action leaves a message to send. Its empty answer to a
	// known streaming method is a stream without messages; a method the
	// proxy does not know is probably unary, and a unary caller needs
	// exactly one message, so it gets an empty one.
	if act != nil && act.Kind == ActionOK && (resp != nil || info == nil) {
		return ss.SendMsg(&resp)
	}
	return nil
}

// outgoing carries the caller's metadata on to the driver, without the
// headers grpc sets itself.
func outgoing(ctx context.Context) context.Context {
	in, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for k, v := range in {
		switch {
		case len(k) > 0 && k[0] == ':', k == "content-type", k == "user-agent", k == "te", len(k) > 5 && k[:5] == "grpc-",
			k == TimeoutHeader, k == CallerHeader:
			continue
		}
		out[k] = v
	}
	return metadata.NewOutgoingContext(ctx, out)
}

// invoke forwards a unary call to the driver, passing its header and
// trailer back. The caller's deadline and cancellation carry over through
// ctx, as they would reach a driver called directly.
func (p *Proxy) invoke(ctx context.Context, ss grpc.ServerStream, full string, req []byte) ([]byte, error) {
	var header, trailer metadata.MD
	var resp []byte
	if timeout, ok := callerTimeout(ctx); ok && timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := p.target.Invoke(outgoing(ctx), full, &req, &resp,
		grpc.ForceCodecV2(rawCodec{}), grpc.Header(&header), grpc.Trailer(&trailer))
	if len(header) > 0 {
		_ = ss.SetHeader(header) // fails only once headers were sent, which they were not
	}
	if len(trailer) > 0 {
		ss.SetTrailer(trailer)
	}
	return resp, err
}

// pump forwards a stream both ways until the driver ends it.
func (p *Proxy) pump(ctx context.Context, ss grpc.ServerStream, full string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := p.target.NewStream(outgoing(ctx), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, full, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	go func() {
		for {
			var m []byte
			if err := ss.RecvMsg(&m); err != nil {
				if errors.Is(err, io.EOF) {
					_ = cs.CloseSend() // never fails, per its documentation
				} else {
					cancel()
				}
				return
			}
			// A failed send ends the stream; the driver's status
			// comes from RecvMsg below.
			if err := cs.SendMsg(&m); err != nil {
				return
			}
		}
	}()
	first := true
	for {
		var m []byte
		err := cs.RecvMsg(&m)
		if first {
			first = false
			if h, herr := cs.Header(); herr == nil && len(h) > 0 {
				_ = ss.SetHeader(h)
			}
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(&m); err != nil {
			return err
		}
	}
}
