package csiclient

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/csisim/csisim/drivers/faultproxy"
)

// WithTimeout bounds a CSI call by timeout, as the real component's own
// timeout does (the kubelet's 2 minutes, a sidecar's --timeout), and sends
// the timeout along with the call, so that a fault proxy on a virtual
// clock can measure it there (faultproxy.TimeoutHeader). Use it for every
// call instead of context.WithTimeout.
func WithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx = metadata.AppendToOutgoingContext(ctx, faultproxy.TimeoutHeader, timeout.String())
	return context.WithTimeout(ctx, timeout)
}

// Option changes how Dial connects.
type Option func(*options)

type options struct {
	virtual bool
	process grpc.UnaryClientInterceptor
	driver  string
}

// Driver names the driver behind the endpoint in every entry the
// connection records (trace.Entry's Driver): for a cluster of several
// drivers, whose timeline says which one each call went to.
func Driver(name string) Option { return func(o *options) { o.driver = name } }

// Process says that every call of the connection is made by one run of a
// caller whose connection ends with it (a simulated sidecar, restarted as
// a new process with a new connection): each call is marked as
// WithProcess marks it, so its calls are not sent once the run has ended,
// and a call in flight when it ended is recorded as cut off, whatever the
// driver answers, as the answer reaches no one.
func Process(id string, running func() bool) Option {
	return func(o *options) {
		o.process = func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(WithProcess(ctx, id, running), method, req, reply, cc, opts...)
		}
	}
}

// WithProcess marks the calls made with ctx as made by one run of a
// caller whose connection outlives it (a kubelet restarted in place keeps
// its node's connection): id names the run to the fault proxy
// (faultproxy.CallerHeader), which can cut off the calls it holds for it,
// and running says whether the run still goes on. A call whose run ended
// before the answer came is recorded cut off (Canceled). A connection
// that ends with its caller's run marks all its calls so (Process).
func WithProcess(ctx context.Context, id string, running func() bool) context.Context {
	ctx = metadata.AppendToOutgoingContext(ctx, faultproxy.CallerHeader, id)
	return context.WithValue(ctx, processKey{}, running)
}

// processKey is the context key of WithProcess's running.
type processKey struct{}

// processEnded says whether the run that made a call with ctx has ended
// (WithProcess).
func processEnded(ctx context.Context) bool {
	running, ok := ctx.Value(processKey{}).(func() bool)
	return ok && !running()
}

// Virtual says that the caller's time is virtual (a simulation's loop):
// the timeout a call was made with is measured on the virtual clock by the
// fault proxy in front of the driver, so the call's wall-time deadline is
// moved out by WallSlack, lest it end a call that the simulation has
// parked on its clock. The proxy still bounds the driver's own answer by
// the timeout in wall time. Cancelling the call's context still cancels
// the call.
func Virtual() Option { return func(o *options) { o.virtual = true } }

// WallSlack is how much later than its timeout a virtual caller's call
// gives up in wall time: long enough for a simulation to run minutes of
// virtual time around a parked call, short enough to end a call that is
// stuck for good.
const WallSlack = 5 * time.Minute

// virtualDeadlines is the interceptor of Virtual connections.
func virtualDeadlines(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	v := md.Get(faultproxy.TimeoutHeader)
	if len(v) == 0 {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	timeout, err := time.ParseDuration(v[len(v)-1])
	if err != nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+WallSlack)
	defer cancel()
	// The parent's deadline is the timeout in wall time: ignore it; its
	// cancellation (the component stopping) still ends the call.
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.Canceled {
			cancel()
		}
	})
	defer stop()
	return invoker(callCtx, method, req, reply, cc, opts...)
}
