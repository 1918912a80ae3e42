package mock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestControllerExpandVolume(t *testing.T) {
	const mi = 1 << 20
	rwo := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	tests := []struct {
		name          string
		block         bool
		size          int64 // the volume's size before
		capacity      int64 // the backend's; 0 unlimited
		req           *csi.CapacityRange
		wantCode      codes.Code
		wantSize      int64
		wantNodeStep  bool
		wantBackendIn int64 // bytes used after
	}{
		{name: "grows a filesystem volume, which needs the node", size: 64 * mi, req: &csi.CapacityRange{RequiredBytes: 128 * mi},
			wantSize: 128 * mi, wantNodeStep: true, wantBackendIn: 128 * mi},
		{name: "grows a block volume, which does not", block: true, size: 64 * mi, req: &csi.CapacityRange{RequiredBytes: 128 * mi},
			wantSize: 128 * mi, wantBackendIn: 128 * mi},
		{name: "never shrinks", size: 128 * mi, req: &csi.CapacityRange{RequiredBytes: 64 * mi},
			wantSize: 128 * mi, wantNodeStep: true, wantBackendIn: 128 * mi},
		{name: "beyond the backend's capacity", size: 64 * mi, capacity: 100 * mi, req: &csi.CapacityRange{RequiredBytes: 128 * mi},
			wantCode: codes.OutOfRange, wantBackendIn: 64 * mi},
		{name: "larger than the limit already", size: 128 * mi, req: &csi.CapacityRange{RequiredBytes: 32 * mi, LimitBytes: 64 * mi},
			wantCode: codes.OutOfRange, wantBackendIn: 128 * mi},
		{name: "no capacity range", size: 64 * mi, wantCode: codes.InvalidArgument, wantBackendIn: 64 * mi},
		{name: "required above limit", size: 64 * mi, req: &csi.CapacityRange{RequiredBytes: 2 * mi, LimitBytes: mi},
			wantCode: codes.InvalidArgument, wantBackendIn: 64 * mi},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, socketDir(t), Config{Name: "x.example", NodeID: "n1", Capacity: tt.capacity})
			ctx := ctxT(t)
			vc := mountCap(rwo)
			if tt.block {
				vc = blockCap(rwo)
			}
			vol, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{vc},
				CapacityRange: &csi.CapacityRange{RequiredBytes: tt.size, LimitBytes: tt.size}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.GetVolume().GetVolumeId(), CapacityRange: tt.req})
			if status.Code(err) != tt.wantCode {
				t.Fatalf("ControllerExpandVolume: %v, want code %s", err, tt.wantCode)
			}
			if err == nil && (resp.GetCapacityBytes() != tt.wantSize || resp.GetNodeExpansionRequired() != tt.wantNodeStep) {
				t.Errorf("answer %v, want %d bytes, node_expansion_required %t", resp, tt.wantSize, tt.wantNodeStep)
			}
			if used, _ := c.d.backend.Usage(); used != tt.wantBackendIn {
				t.Errorf("backend uses %d bytes, want %d", used, tt.wantBackendIn)
			}
		})
	}
	c := serve(t, socketDir(t), Config{Name: "x.example", NodeID: "n1"})
	_, err := c.ctrl.ControllerExpandVolume(ctxT(t), &csi.ControllerExpandVolumeRequest{VolumeId: "nope", CapacityRange: &csi.CapacityRange{RequiredBytes: 1}})
	if status.Code(err) != codes.NotFound {
		t.Errorf("an unknown volume: %v, want NotFound", err)
	}
}

// The spec leaves target_path to the plugin, its parent to the CO: the
// mock makes it on NodePublishVolume and removes it on NodeUnpublishVolume,
// and makes nothing where the parent is missing.
func TestNodePublishMakesTheTarget(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, dir, Config{Name: "x.example", NodeID: "n1", NoAttach: true, NoStageUnstage: true})
	ctx := ctxT(t)
	rwo := mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	vol, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	target := filepath.Join(dir, "pods", "target")
	if err := os.Mkdir(filepath.Dir(target), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: rwo}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Fatalf("target after NodePublishVolume: %v, %v", fi, err)
	}
	if _, err := c.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("target after NodeUnpublishVolume: %v", err)
	}
	nowhere := filepath.Join(dir, "missing", "target")
	if _, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: nowhere, VolumeCapability: rwo}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(nowhere)); !os.IsNotExist(err) {
		t.Errorf("the mock made the CO's parent directory: %v", err)
	}
}

func TestControllerModifyVolume(t *testing.T) {
	c := serve(t, socketDir(t), Config{Name: "x.example", NodeID: "n1"})
	ctx := ctxT(t)
	rwo := mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "bad", VolumeCapabilities: []*csi.VolumeCapability{rwo},
		MutableParameters: map[string]string{"tier": "gold"}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("CreateVolume with an unknown mutable parameter: %v, want InvalidArgument", err)
	}
	vol, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{rwo},
		MutableParameters: map[string]string{"iops": "3000"}})
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	for _, tc := range []struct {
		name   string
		id     string
		params map[string]string
		want   codes.Code
	}{
		{"new iops", id, map[string]string{"iops": "6000"}, codes.OK},
		{"nothing to change", id, nil, codes.OK},
		{"unknown key", id, map[string]string{"tier": "gold"}, codes.InvalidArgument},
		{"no volume ID", "", map[string]string{"iops": "1"}, codes.InvalidArgument},
		{"unknown volume", "nope", map[string]string{"iops": "1"}, codes.NotFound},
	} {
		_, err := c.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: tc.id, MutableParameters: tc.params})
		if status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	if got := c.d.backend.volumes[id].mutable["iops"]; got != "6000" {
		t.Errorf("the volume's iops are %q, want 6000", got)
	}
}
