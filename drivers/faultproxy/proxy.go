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
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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

// InterruptParked ends the delays and hangs parked on the virtual clock
// (Config.Park) now: their callers get Unavailable, as callers of a driver
// that has just died do. The proxy goes on serving.
func (p *Proxy) InterruptParked() { p.InterruptParkedOf("") }

// InterruptParkedOf ends, as InterruptParked does, the parked calls of the
// caller that named itself so in CallerHeader (every parked call for "").
func (p *Proxy) InterruptParkedOf(caller string) {
	p.parksMu.Lock()
	defer p.parksMu.Unlock()
	for _, pc := range p.parks {
		if caller == "" || pc.caller == caller {
			pc.interrupt()
		}
	}
}

// parkedCall is a call parked on the virtual clock: how to end its wait,
// and who made it (CallerHeader).
type parkedCall struct {
	interrupt func()
	caller    string
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

// execute carries out the action on a call, forwarding it through forward
// when the action asks for that; nil act forwards untouched.
func (p *Proxy) execute(ctx context.Context, c *Call, info *methodInfo, act *Action, forward func() ([]byte, error)) ([]byte, error) {
	if act == nil {
		return forward()
	}
	var resp []byte
	var err error
	if act.AfterForward {
		resp, err = forward()
		if act.Kind != ActionDelay {
			p.noteLostAnswer(c, info, resp, err)
		}
	}
	if act.Kind == ActionCrash {
		return nil, p.crash(c)
	}
	switch act.Kind {
	case ActionError:
		msg := act.Message
		if msg == "" {
			msg = fmt.Sprintf("injected by faultproxy rule %s", c.Rule)
		}
		return nil, status.Error(act.Code, msg)
	case ActionDelay:
		if werr := p.wait(ctx, act.Delay, c.Rule); werr != nil {
			return nil, werr
		}
		if act.AfterForward {
			return resp, err
		}
		return forward()
	case ActionHang:
		return nil, p.hang(ctx, act.Delay, c.Rule)
	case ActionDrop:
		p.drop(ctx)
		return nil, status.Errorf(codes.Unavailable, "connection dropped by faultproxy rule %s", c.Rule)
	case ActionOK:
		return okResponse(info, act.Response, c.Rule)
	}
	return nil, status.Errorf(codes.Internal, "faultproxy rule %s: unknown action %v", c.Rule, act.Kind)
}

// crash kills the driver behind the proxy (Config.Crash, which starts it
// again) after it has answered c, and returns what the caller of a driver
// that died mid-call gets.
func (p *Proxy) crash(c *Call) error {
	err := p.cfg.Crash()
	if rec := p.cfg.Recorder; rec != nil {
		rec.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: "driver-crashed", Object: "the driver behind it",
			Detail: "killed after it answered " + c.Method + " (rule " + c.Rule + "), then started again", Err: errText(err)})
	}
	// What grpc-go's client says when the server's side of the
	// connection goes.
	return status.Error(codes.Unavailable, "error reading from server: EOF")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// noteLostAnswer records in the timeline what the driver answered to a call
// whose answer the rule keeps from the caller: the caller's own record
// shows only the error it got, so this is the one record of the work the
// driver did (a volume made or deleted), which the invariants read.
func (p *Proxy) noteLostAnswer(c *Call, info *methodInfo, resp []byte, err error) {
	if p.cfg.Recorder == nil {
		return
	}
	answer := *c
	answer.Capabilities = nil
	if err != nil {
		st := status.Convert(err)
		answer.Code, answer.Message = st.Code(), st.Message()
	} else {
		describeResponse(&answer, info, resp)
	}
	object := answer.VolumeID
	if answer.Name != "" {
		object = answer.Name
		if answer.VolumeID != "" {
			object += " -> " + answer.VolumeID
		}
	}
	p.cfg.Recorder.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: c.Method, Object: object,
		Detail: "answer lost: the driver answered " + answer.Code.String() + " to rule " + c.Rule, Call: answer.Trace()})
}

// wait lets d pass, unless the caller gives up or the proxy stops first.
func (p *Proxy) wait(ctx context.Context, d time.Duration, rule string) error {
	if timeout, ok := callerTimeout(ctx); ok && p.cfg.Park != nil {
		return p.park(d, timeout, false, rule, callerOf(ctx))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-p.stopping:
		return status.Errorf(codes.Unavailable, "faultproxy stopped during the delay of rule %s", rule)
	}
}

// hang answers nothing until the caller gives up, limit (if not 0) passes
// or the proxy stops.
func (p *Proxy) hang(ctx context.Context, limit time.Duration, rule string) error {
	if timeout, ok := callerTimeout(ctx); ok && p.cfg.Park != nil {
		return p.park(limit, timeout, true, rule, callerOf(ctx))
	}
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-expired:
		return hungFor(rule, limit)
	case <-p.stopping:
		return status.Errorf(codes.Unavailable, "faultproxy stopped while rule %s hung the call", rule)
	}
}

func hungFor(rule string, limit time.Duration) error {
	return status.Errorf(codes.DeadlineExceeded, "faultproxy rule %s hung the call for %s", rule, limit)
}

// park is wait and hang on the caller's virtual clock: d passes (0: never,
// for a hang without limit), unless the caller's timeout comes first, when
// the caller gets what a gRPC client whose deadline passes gets.
func (p *Proxy) park(d, timeout time.Duration, hang bool, rule, caller string) error {
	limit, callerFirst := d, false
	if timeout > 0 && (limit <= 0 || timeout <= limit) {
		limit, callerFirst = timeout, true
	}
	wait, interrupt := p.cfg.Park(limit)
	p.parksMu.Lock()
	p.nextPark++
	id := p.nextPark
	if p.parks == nil {
		p.parks = map[int]parkedCall{}
	}
	p.parks[id] = parkedCall{interrupt: interrupt, caller: caller}
	stopped := p.stopped
	p.parksMu.Unlock()
	if stopped {
		// Still wait: the clock's owner expects the wait it was promised.
		interrupt()
	}
	passed := wait()
	p.parksMu.Lock()
	delete(p.parks, id)
	p.parksMu.Unlock()
	switch {
	case !passed:
		// Cut off (the proxy stopped, or the driver behind it died): what
		// grpc-go says when the server's side of the connection goes.
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	case callerFirst:
		// The words grpc-go's client uses when its deadline passes.
		return status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	case hang:
		return hungFor(rule, limit)
	}
	return nil
}

// callerOf reads the caller a call names in CallerHeader, "" if none.
func callerOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(CallerHeader); len(v) > 0 {
		return v[0]
	}
	return ""
}

// callerTimeout reads the timeout a caller on a virtual clock sent in
// TimeoutHeader.
func callerTimeout(ctx context.Context) (time.Duration, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(TimeoutHeader)
	if len(v) == 0 {
		return 0, false
	}
	d, err := time.ParseDuration(v[0])
	if err != nil {
		return 0, false
	}
	return d, true
}

// drop closes the connection the call came on. grpc knows the connection
// only by its peer address, which the tracking listener makes unique.
func (p *Proxy) drop(ctx context.Context) {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return
	}
	if a, ok := pr.Addr.(*connAddr); ok {
		p.lis.closeConn(a.id)
	}
}

// okResponse is the answer of an ok action: the configured response, or
// nil for an empty one.
func okResponse(info *methodInfo, resp proto.Message, rule string) ([]byte, error) {
	if resp == nil {
		return nil, nil
	}
	if info != nil {
		if got, want := resp.ProtoReflect().Descriptor().FullName(), info.resp.Descriptor().FullName(); got != want {
			return nil, status.Errorf(codes.Internal, "faultproxy rule %s: configured response is a %s, %s answers a %s", rule, got, info.name, want)
		}
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "faultproxy rule %s: encode response: %v", rule, err)
	}
	return b, nil
}

// pick finds the rule that fires on the call, if any, and notes it in the
// call and the timeline.
func (p *Proxy) pick(c *Call) *Action {
	p.rulesMu.Lock()
	var chosen *ruleState
	for _, s := range p.rules {
		if s.consider(c) && chosen == nil {
			chosen = s
		}
	}
	if chosen == nil {
		p.rulesMu.Unlock()
		return nil
	}
	chosen.fired++
	r := chosen.rule
	p.rulesMu.Unlock()

	c.Rule, c.Action = r.ID, r.Action.Kind
	if rec := p.cfg.Recorder; rec != nil {
		object := c.VolumeID
		if object == "" {
			object = c.Name
		}
		rec.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: c.Method, Object: object, Detail: "rule " + r.String()})
	}
	return &r.Action
}

// SetRules replaces every rule, resetting all counters. Either all rules
// are valid and in force, or none changes.
func (p *Proxy) SetRules(rules ...Rule) error {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	// Explicit IDs first, so that a generated one never takes the ID a
	// later rule asks for.
	taken := map[string]bool{}
	for i, r := range rules {
		if err := p.check(r); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i+1, r, err)
		}
		if r.ID != "" && taken[r.ID] {
			return fmt.Errorf("rule %d: duplicate ID %q", i+1, r.ID)
		}
		taken[r.ID] = true
	}
	states := make([]*ruleState, 0, len(rules))
	next := p.nextRule
	for _, r := range rules {
		if r.ID == "" {
			r.ID, next = freeID(next, taken)
			taken[r.ID] = true
		}
		states = append(states, newRuleState(r, p.cfg.Seed))
	}
	p.rules, p.nextRule = states, next
	return nil
}

// AddRule appends a rule, which is considered after the existing ones, and
// returns its ID.
func (p *Proxy) AddRule(r Rule) (string, error) {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	if err := p.check(r); err != nil {
		return "", fmt.Errorf("rule %s: %w", r, err)
	}
	taken := map[string]bool{}
	for _, s := range p.rules {
		taken[s.rule.ID] = true
	}
	if r.ID == "" {
		r.ID, p.nextRule = freeID(p.nextRule, taken)
	} else if taken[r.ID] {
		return "", fmt.Errorf("rule %s: duplicate ID %q", r, r.ID)
	}
	p.rules = append(p.rules, newRuleState(r, p.cfg.Seed))
	return r.ID, nil
}

// check says whether the rule is valid and this proxy can carry it out:
// a crash rule needs Config.Crash.
func (p *Proxy) check(r Rule) error {
	if err := r.validate(p.names); err != nil {
		return err
	}
	if r.Action.Kind == ActionCrash && p.cfg.Crash == nil {
		return fmt.Errorf("proxy %s cannot kill the driver behind it (no Config.Crash)", p.cfg.Name)
	}
	return nil
}

// freeID returns the next "rule-N" ID not in taken, and the counter after it.
func freeID(next int, taken map[string]bool) (string, int) {
	for {
		next++
		id := fmt.Sprintf("rule-%d", next)
		if !taken[id] {
			return id, next
		}
	}
}

// RemoveRule removes the rule with the ID and reports whether there was one.
func (p *Proxy) RemoveRule(id string) bool {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	i := slices.IndexFunc(p.rules, func(s *ruleState) bool { return s.rule.ID == id })
	if i < 0 {
		return false
	}
	p.rules = slices.Delete(p.rules, i, i+1)
	return true
}

// Clear removes every rule: from now on, every call is forwarded untouched.
func (p *Proxy) Clear() {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	p.rules = nil
}

// Rules returns the rules in force, in the order they are considered, with
// their counters.
func (p *Proxy) Rules() []RuleStatus {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	out := make([]RuleStatus, 0, len(p.rules))
	for _, s := range p.rules {
		out = append(out, RuleStatus{Rule: s.rule, Matched: s.matched, Fired: s.fired})
	}
	return out
}

// rawCodec passes messages through as bytes. It calls itself "proto" so
// that the content type on the wire stays application/grpc+proto, which
// every driver understands.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("faultproxy codec: cannot send %T", v)
	}
	if len(*b) == 0 {
		return nil, nil
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("faultproxy codec: cannot receive into %T", v)
	}
	// Materialize copies: grpc frees data when Unmarshal returns.
	*b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// trackingListener gives every accepted connection a unique address, so a
// call's peer address leads back to its connection and the drop action can
// close it.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	next  uint64
	conns map[uint64]*trackedConn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	tc := &trackedConn{Conn: c, l: l, addr: &connAddr{id: l.next, inner: c.RemoteAddr()}}
	l.conns[l.next] = tc
	return tc, nil
}

// closeConn closes a connection abruptly, without a goodbye to its client.
func (l *trackingListener) closeConn(id uint64) {
	l.mu.Lock()
	c := l.conns[id]
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (l *trackingListener) forget(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, id)
}

type trackedConn struct {
	net.Conn
	l    *trackingListener
	addr *connAddr
	once sync.Once
}

func (c *trackedConn) RemoteAddr() net.Addr { return c.addr }

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.forget(c.addr.id) })
	return c.Conn.Close()
}

// connAddr is a connection's peer address made unique by a number: unix
// socket clients are usually unnamed, so their own addresses are all alike.
type connAddr struct {
	id    uint64
	inner net.Addr
}

func (a *connAddr) Network() string { return "unix" }
func (a *connAddr) String() string  { return fmt.Sprintf("%v#%d", a.inner, a.id) }
