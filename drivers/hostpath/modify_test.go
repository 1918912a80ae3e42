package hostpath

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestControllerModifyVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()

	bad := createReq("pvc-bad", 10*mib, 0)
	bad.MutableParameters = map[string]string{"tier": "gold"}
	_, err := r.ctrl.CreateVolume(ctx, bad)
	wantCode(t, err, codes.InvalidArgument)

	req := createReq("pvc-a", 10*mib, 0)
	req.MutableParameters = map[string]string{"iops": "3000"}
	vol, err := r.ctrl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	tests := []struct {
		name     string
		id       string
		params   map[string]string
		wantCode codes.Code
	}{
		{"new throughput", id, map[string]string{"throughput": "250"}, codes.OK},
		{"nothing to change", id, nil, codes.OK},
		{"unknown key", id, map[string]string{"tier": "gold"}, codes.InvalidArgument},
		{"not a number", id, map[string]string{"iops": "many"}, codes.InvalidArgument},
		{"no volume ID", "", map[string]string{"iops": "1"}, codes.InvalidArgument},
		{"unknown volume", "vol-0000", map[string]string{"iops": "1"}, codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: tc.id, MutableParameters: tc.params})
			wantCode(t, err, tc.wantCode)
		})
	}
	// What the volume was created with and then modified with, both kept
	// in its record.
	got := r.d.state.Volumes[id].MutableParameters
	if got["iops"] != "3000" || got["throughput"] != "250" || len(got) != 2 {
		t.Errorf("the volume's mutable parameters are %v, want iops 3000 and throughput 250", got)
	}
}
