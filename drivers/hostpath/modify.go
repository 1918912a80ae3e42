package hostpath

import (
	"context"
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/csiutil"
)

// ControllerModifyVolume applies a volume's new mutable parameters (a
// VolumeAttributesClass's): the keys csiutil.CheckMutableParameters
// accepts are merged into the volume's record, a key it does not know is
// InvalidArgument, which the external-resizer makes the claim's Infeasible
// modify. No parameter at all is a modify that changes nothing.
func (s *controllerServer) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerModifyVolume: %v", err)
	}
	if err := csiutil.CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerModifyVolume: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.state.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerModifyVolume: volume %s does not exist", id)
	}
	if len(req.GetMutableParameters()) == 0 {
		return &csi.ControllerModifyVolumeResponse{}, nil
	}
	before := v.MutableParameters
	v.MutableParameters = maps.Clone(before)
	if v.MutableParameters == nil {
		v.MutableParameters = map[string]string{}
	}
	maps.Copy(v.MutableParameters, req.GetMutableParameters())
	if err := d.store.save(d.state); err != nil {
		v.MutableParameters = before
		return nil, status.Errorf(codes.Internal, "ControllerModifyVolume: %v", err)
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}
