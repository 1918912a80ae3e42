package driverinfo

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// blockController answers CreateVolume with createErr, or a volume, and
// records what it was asked.
type blockController struct {
	csi.ControllerClient
	createErr, deleteErr error
	created              *csi.CreateVolumeRequest
	deleted              []string
}

func (c *blockController) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest, _ ...grpc.CallOption) (*csi.CreateVolumeResponse, error) {
	c.created = req
	if c.createErr != nil {
		return nil, c.createErr
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (c *blockController) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest, _ ...grpc.CallOption) (*csi.DeleteVolumeResponse, error) {
	c.deleted = append(c.deleted, req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, c.deleteErr
}

func TestTryBlock(t *testing.T) {
	refused := status.Error(codes.InvalidArgument, "block volumes are not supported")
	for _, tc := range []struct {
		name                 string
		createErr, deleteErr error
		wantErr              string
		wantDeleted          int
	}{
		{name: "made and deleted", wantDeleted: 1},
		{name: "refused", createErr: refused, wantErr: "CreateVolume of a raw block volume (csisim-block-check, SINGLE_NODE_WRITER, 67108864 bytes) answered: rpc error: code = InvalidArgument desc = block volumes are not supported"},
		{name: "not deleted", deleteErr: errors.New("busy"), wantErr: "DeleteVolume of the raw block volume csisim-block-check it made (vol-1) answered: busy", wantDeleted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &blockController{createErr: tc.createErr, deleteErr: tc.deleteErr}
			err := TryBlock(context.Background(), c, BlockTrial{
				Parameters: map[string]string{"kind": "block", "csi.storage.k8s.io/fstype": "ext4"},
				Topology:   map[string]string{"zone": "a"},
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if len(c.deleted) != tc.wantDeleted {
				t.Fatalf("DeleteVolume of %v, want %d", c.deleted, tc.wantDeleted)
			}
			req := c.created
			if !maps.Equal(req.GetParameters(), map[string]string{"kind": "block"}) {
				t.Errorf("parameters %v: the provisioner's own (csi.storage.k8s.io/) are not the driver's", req.GetParameters())
			}
			if req.GetVolumeCapabilities()[0].GetBlock() == nil || req.GetCapacityRange().GetRequiredBytes() != 64<<20 {
				t.Errorf("request %v: want a 64 MiB block volume", req)
			}
			if top := req.GetAccessibilityRequirements().GetPreferred(); len(top) != 1 || top[0].GetSegments()["zone"] != "a" {
				t.Errorf("accessibility %v: want the node's topology", req.GetAccessibilityRequirements())
			}
		})
	}
	if !NeedsSecrets(map[string]string{"csi.storage.k8s.io/provisioner-secret-name": "s"}) ||
		NeedsSecrets(map[string]string{"csi.storage.k8s.io/node-stage-secret-name": "s"}) {
		t.Error("NeedsSecrets: only the secret CreateVolume is given counts")
	}
}
