package faultproxy

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/drivers/mock"
)

// benchCalls are the calls the latency benchmarks make: an identity call
// and a node call, both answered by the mock at once.
func benchCalls() []benchCall {
	return []benchCall{
		{"GetPluginInfo", func(ctx context.Context, id csi.IdentityClient, _ csi.NodeClient) error {
			return errOf(id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}))
		}},
		{"NodeGetCapabilities", func(ctx context.Context, _ csi.IdentityClient, node csi.NodeClient) error {
			return errOf(node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}))
		}},
	}
}

type benchCall struct {
	name string
	call func(ctx context.Context, id csi.IdentityClient, node csi.NodeClient) error
}

// BenchmarkCall measures one call direct to the mock driver and the same
// call through the proxy, with no rules and with ten rules that do not
// match; ns/op of "proxy" minus "direct" is what the proxy adds. The
// "proxy-ok" run answers from the proxy without forwarding: one gRPC hop
// like "direct", so the difference to it is the proxy's own work (decoding,
// rules) without the second hop. Nothing takes the finished calls, as in
// the simulator, whose clients record their own.
func BenchmarkCall(b *testing.B) {
	e := newEnv(b, Config{OnCall: func(Call) {}}, mock.Config{})
	direct := dial(b, e.driverEndpoint)
	did, dnode := csi.NewIdentityClient(direct), csi.NewNodeClient(direct)
	ctx := context.Background()
	var tenRules []Rule
	for range 10 {
		tenRules = append(tenRules, Rule{Method: "CreateVolume", VolumeID: "elsewhere", Action: Action{Kind: ActionError, Code: codes.Internal}})
	}
	for _, bc := range benchCalls() {
		for _, via := range []struct {
			name  string
			rules []Rule
		}{{"direct", nil}, {"proxy", nil}, {"proxy-10-rules", tenRules}, {"proxy-ok", []Rule{{Method: "*", Action: Action{Kind: ActionOK}}}}} {
			b.Run(bc.name+"/"+via.name, func(b *testing.B) {
				if err := e.proxy.SetRules(via.rules...); err != nil {
					b.Fatal(err)
				}
				id, node := e.id, e.node
				if via.name == "direct" {
					id, node = did, dnode
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := bc.call(ctx, id, node); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAddedLatency alternates a direct call and a proxied one, so that
// both see the same machine state, and reports each and their difference.
func BenchmarkAddedLatency(b *testing.B) {
	e := newEnv(b, Config{OnCall: func(Call) {}}, mock.Config{})
	direct := dial(b, e.driverEndpoint)
	did, dnode := csi.NewIdentityClient(direct), csi.NewNodeClient(direct)
	ctx := context.Background()
	for _, bc := range benchCalls() {
		b.Run(bc.name, func(b *testing.B) {
			var viaDirect, viaProxy time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				if err := bc.call(ctx, did, dnode); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := bc.call(ctx, e.id, e.node); err != nil {
					b.Fatal(err)
				}
				viaProxy += time.Since(t1)
				viaDirect += t1.Sub(t0)
				n++
			}
			b.ReportMetric(float64(viaDirect.Nanoseconds())/float64(n), "direct-ns/call")
			b.ReportMetric(float64(viaProxy.Nanoseconds())/float64(n), "proxy-ns/call")
			b.ReportMetric(float64((viaProxy-viaDirect).Nanoseconds())/float64(n), "added-ns/call")
		})
	}
}
