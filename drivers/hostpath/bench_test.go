package hostpath

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// benchKinds are the volume kinds and access types the node benchmarks
// cover.
var benchKinds = []struct {
	name   string
	params map[string]string
	cap    *csi.VolumeCapability
}{
	{"directory", nil, rwo},
	{"block-mount", blockParams, rwo},
	{"block-raw", blockParams, rwoBlock},
}

// BenchmarkNodeStagePublish measures one pod start and stop on a node:
// NodeStageVolume, NodePublishVolume, NodeUnpublishVolume and
// NodeUnstageVolume of one volume that is already created and attached, over
// gRPC on a unix socket as a CO calls them. Each call's mean latency is
// reported as a metric of its own. For block-mount the file system is made
// before the timed loop; BenchmarkNodeStageFormat measures that.
func BenchmarkNodeStagePublish(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run(kind.name, func(b *testing.B) {
			env := newTestEnv(b)
			r := env.start(b, Config{Log: io.Discard})
			ctx := context.Background()
			vol, pubCtx := benchVolume(b, r, "pvc-bench", kind.params, kind.cap)
			staging := filepath.Join(env.dir, "staging")
			target := filepath.Join(env.dir, "pods", "target")
			steps := []struct {
				metric string
				call   func() error
			}{
				{"stage-µs/op", func() error {
					_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: kind.cap, PublishContext: pubCtx})
					return err
				}},
				{"publish-µs/op", func() error {
					_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: staging, TargetPath: target, VolumeCapability: kind.cap, PublishContext: pubCtx})
					return err
				}},
				{"unpublish-µs/op", func() error {
					_, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target})
					return err
				}},
				{"unstage-µs/op", func() error {
					_, err := r.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging})
					return err
				}},
			}
			// One untimed round formats a block volume, so that the loop
			// measures the steady state: every later stage finds the file
			// system.
			for _, s := range steps {
				if err := s.call(); err != nil {
					b.Fatal(err)
				}
			}
			spent := make([]time.Duration, len(steps))
			n := 0
			for b.Loop() {
				for i, s := range steps {
					start := time.Now()
					if err := s.call(); err != nil {
						b.Fatalf("%s: %v", s.metric, err)
					}
					spent[i] += time.Since(start)
				}
				n++
			}
			for i, s := range steps {
				b.ReportMetric(float64(spent[i].Microseconds())/float64(n), s.metric)
			}
		})
	}
}

// BenchmarkNodeStageFormat measures the first NodeStageVolume of a new
// block volume, which formats it (mkfs.ext4 on a 64 MiB sparse image);
// creating, attaching, unstaging and deleting the volume are not timed.
func BenchmarkNodeStageFormat(b *testing.B) {
	env := newTestEnv(b)
	r := env.start(b, Config{Log: io.Discard})
	ctx := context.Background()
	staging := filepath.Join(env.dir, "staging")
	for i := range b.N {
		b.StopTimer()
		vol, pubCtx := benchVolume(b, r, fmt.Sprintf("pvc-format-%d", i), blockParams, rwo)
		b.StartTimer()
		if _, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: rwo, PublishContext: pubCtx}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := r.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: "node-1"}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// benchVolume creates a 64 MiB volume and publishes it to node-1.
func benchVolume(b *testing.B, r *running, name string, params map[string]string, c *csi.VolumeCapability) (string, map[string]string) {
	b.Helper()
	ctx := context.Background()
	resp, err := r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: name, Parameters: params, VolumeCapabilities: []*csi.VolumeCapability{c},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 64 * mib},
	})
	if err != nil {
		b.Fatal(err)
	}
	vol := resp.GetVolume().GetVolumeId()
	pub, err := r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "node-1", VolumeCapability: c})
	if err != nil {
		b.Fatal(err)
	}
	return vol, pub.GetPublishContext()
}
