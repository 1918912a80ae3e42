// Package csiclient connects simulated components to CSI drivers over gRPC
// on unix sockets, recording every call in the run's timeline.
package csiclient

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// Conn is a connection to one CSI driver endpoint with typed clients for
// its services.
type Conn struct {
	conn            *grpc.ClientConn
	Identity        csi.IdentityClient
	Controller      csi.ControllerClient
	GroupController csi.GroupControllerClient
	Node            csi.NodeClient
}

// Dial connects to endpoint ("unix:///path/csi.sock") as actor; every call
// is added to rec (if not nil) when it completes.
func Dial(endpoint, actor string, rec *trace.Recorder, opts ...Option) (*Conn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var interceptors []grpc.UnaryClientInterceptor
	if o.process != nil {
		// First, so that the recording sees the call's process.
		interceptors = append(interceptors, o.process)
	}
	interceptors = append(interceptors, recordCalls(actor, o.driver, rec))
	if o.virtual {
		interceptors = append(interceptors, virtualDeadlines)
	}
	cc, err := grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(interceptors...))
	if err != nil {
		return nil, fmt.Errorf("connecting to CSI driver at %s: %w", endpoint, err)
	}
	return &Conn{
		conn:            cc,
		Identity:        csi.NewIdentityClient(cc),
		Controller:      csi.NewControllerClient(cc),
		GroupController: csi.NewGroupControllerClient(cc),
		Node:            csi.NewNodeClient(cc),
	}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// volumeIDer is what the CSI requests that concern one volume have in common.
type volumeIDer interface{ GetVolumeId() string }

// recordCalls returns an interceptor that adds one CSI entry per call:
// method, volume, result code, and how long the call took in wall time
// (the virtual clock stands still during a call), with the call's
// structured data, described as the fault proxy describes the calls it
// sees, for the invariant checker.
func recordCalls(actor, driver string, rec *trace.Recorder) grpc.UnaryClientInterceptor {
	node, _ := fault.KubeletNode(actor) // "" for the sidecars
	var mu sync.Mutex
	nodeID := "" // the node plugin's answer to NodeGetInfo, once seen
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if processEnded(ctx) {
			return status.Errorf(codes.Unavailable, "%s has exited", actor)
		}
		if rec == nil {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		startedAfter, started := rec.Len(), rec.Now()
		describe := func(answer any) *trace.CSICall {
			mu.Lock()
			id := nodeID
			mu.Unlock()
			c := faultproxy.Describe(method, req, answer, cmp.Or(id, node)).Trace()
			c.StartedAfter, c.Started = startedAfter, started
			if strings.HasPrefix(method, "/csi.v1.Node/") {
				c.Node = node
			}
			return c
		}
		// In flight until it returns: a call that hangs shows from its
		// start on a live page.
		pending := rec.Begin(trace.Entry{Kind: trace.CSI, Actor: actor, Verb: path.Base(method), Object: VolumeOf(req, nil),
			Detail: "in flight", Driver: driver, Call: describe(nil)})
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		e := trace.Entry{Kind: trace.CSI, Actor: actor, Verb: path.Base(method), Object: VolumeOf(req, reply),
			Driver: driver, Wall: time.Since(start).Round(time.Microsecond)}
		if processEnded(ctx) {
			// What the proxy in front of a real sidecar records when
			// the sidecar dies during a call.
			err = status.Error(codes.Canceled, "context canceled")
		}
		st, _ := status.FromError(err)
		if err != nil {
			e.Detail = st.Code().String()
			e.Err = st.Message()
		} else {
			e.Detail = "OK"
		}
		if info, ok := reply.(*csi.NodeGetInfoResponse); ok && err == nil {
			mu.Lock()
			nodeID = info.GetNodeId()
			mu.Unlock()
		}
		answer := reply
		if err != nil {
			answer = nil
		}
		e.Call = describe(answer)
		e.Call.Code = st.Code()
		pending.End(e)
		return err
	}
}

// VolumeOf names the volume a call concerns: the request's volume ID, or for
// CreateVolume the name asked for and the ID returned; for CreateSnapshot
// the snapshot's name.
func VolumeOf(req, reply any) string {
	switch r := req.(type) {
	case *csi.CreateVolumeRequest:
		if resp, ok := reply.(*csi.CreateVolumeResponse); ok && resp.GetVolume().GetVolumeId() != "" {
			return r.GetName() + " -> " + resp.GetVolume().GetVolumeId()
		}
		return r.GetName()
	case *csi.CreateSnapshotRequest:
		// The snapshot's name (snapshot-<VolumeSnapshot uid>), as the
		// real control plane's timeline names it (realcluster callEntry).
		return r.GetName()
	case volumeIDer:
		return r.GetVolumeId()
	}
	return ""
}
