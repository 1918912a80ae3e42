package hostpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// A node's limit changed in the backend shows in NodeGetInfo and is what
// ControllerPublishVolume enforces; an unknown node or a negative limit is
// refused.
func TestSetNodeVolumeLimit(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{MaxVolumesPerNode: 3})
	ctx := context.Background()
	limit := func() int64 {
		t.Helper()
		info, err := r.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return info.GetMaxVolumesPerNode()
	}
	if got := limit(); got != 3 {
		t.Fatalf("NodeGetInfo max_volumes_per_node = %d before the change, want 3", got)
	}
	if err := SetNodeVolumeLimit(env.root, "node-1", 1); err != nil {
		t.Fatal(err)
	}
	if got := limit(); got != 1 {
		t.Fatalf("NodeGetInfo max_volumes_per_node = %d after the change, want 1", got)
	}
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		vol, err := r.ctrl.CreateVolume(ctx, createReq(fmt.Sprintf("pvc-%d", i), 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol.GetVolume().GetVolumeId(), NodeId: "node-1", VolumeCapability: rwo})
		wantCode(t, err, want)
	}
	for _, tc := range []struct {
		node  string
		limit int64
	}{{"node-9", 1}, {"node-1", -1}} {
		if err := SetNodeVolumeLimit(env.root, tc.node, tc.limit); err == nil {
			t.Errorf("SetNodeVolumeLimit(%s, %d) succeeded", tc.node, tc.limit)
		}
	}
}
