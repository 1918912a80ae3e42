package mock

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// The benchmarks measure the mock over real gRPC on a unix socket, one
// client connection, as the simulator uses it: serially (one call at a
// time, the latency a caller sees) and in parallel (GOMAXPROCS callers,
// the throughput a scale run gets).

func BenchmarkCreateVolume(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[parallel], func(b *testing.B) {
			c := serve(b, socketDir(b), Config{NodeID: "n1"})
			ctx := ctxT(b)
			var n atomic.Int64
			// Errors are reported with Error, not Fatal, which must not be
			// called from RunParallel's goroutines.
			create := func() {
				name := fmt.Sprintf("pvc-%d", n.Add(1))
				if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}); err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						create()
					}
				})
			} else {
				for b.Loop() {
					create()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

func BenchmarkNodePublishVolume(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[parallel], func(b *testing.B) {
			c := serve(b, socketDir(b), Config{NodeID: "n1"})
			ctx := ctxT(b)
			if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "shared", VolumeCapabilities: []*csi.VolumeCapability{rwx}}); err != nil {
				b.Fatal(err)
			}
			pc, err := c.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-shared", NodeId: "n1", VolumeCapability: rwx})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "mock-shared", StagingTargetPath: "/staging", VolumeCapability: rwx, PublishContext: pc.GetPublishContext()}); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			publish := func() {
				target := fmt.Sprintf("/pods/%d/vol", n.Add(1))
				if _, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "mock-shared", StagingTargetPath: "/staging", TargetPath: target, VolumeCapability: rwx}); err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						publish()
					}
				})
			} else {
				for b.Loop() {
					publish()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
