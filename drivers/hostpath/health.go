package hostpath

// Volume health as CSI v1.13 has it (ControllerGetVolumeHealth,
// ControllerListVolumeHealth, NodeGetVolumeHealth; the VolumeCondition of
// earlier specs is gone). A volume is unhealthy when its backing directory
// or image is missing, or when the storage system's operator says so
// (SetVolumeHealth): a degraded array, a lost replica. csisim's fault step
// volumeHealth calls SetVolumeHealth on the run's backend; every plugin
// process sees the change at its next call, as a driver asking its storage
// system would.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ReasonBackingMissing is the reason a volume whose backing directory or
// image is gone is reported INACCESSIBLE with.
const ReasonBackingMissing = "BackingStoreMissing"

// HealthCondition is an adverse condition the backend reports for a
// volume: Status is a CSI VolumeHealthErrorType name (DEGRADED,
// INACCESSIBLE, DATA_LOSS), Reason a CamelCase word.
type HealthCondition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

func healthRecordPath(root, volumeID string) string {
	return filepath.Join(root, "health", volumeID+".json")
}

// SetVolumeHealth makes the backend report c for the volume from now on;
// nil makes it report the volume healthy again. The volume must exist in
// the backend.
func SetVolumeHealth(root, volumeID string, c *HealthCondition) error {
	if err := checkVolumeID(volumeID); err != nil {
		return err
	}
	if c == nil {
		if err := os.Remove(healthRecordPath(root, volumeID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("volume %s: clear health: %w", volumeID, err)
		}
		return nil
	}
	if _, err := healthStatus(c.Status); err != nil {
		return fmt.Errorf("volume %s: %w", volumeID, err)
	}
	if c.Reason == "" {
		return fmt.Errorf("volume %s: a health condition needs a reason", volumeID)
	}
	probe := &Driver{root: root}
	if _, ok, err := probe.volumeKindOf(volumeID); err != nil || !ok {
		return fmt.Errorf("volume %s: not in the backend %s (%v)", volumeID, root, err)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(healthRecordPath(root, volumeID)), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(healthRecordPath(root, volumeID), raw)
}

// healthStatus is the CSI error type a HealthCondition's Status names.
func healthStatus(name string) (csi.VolumeHealthErrorType, error) {
	v, ok := csi.VolumeHealthErrorType_value[name]
	if !ok || v == int32(csi.VolumeHealthErrorType_UNKNOWN_VOLUME_HEALTH_TYPE) {
		return 0, fmt.Errorf("health status %q is none of DEGRADED, INACCESSIBLE, DATA_LOSS", name)
	}
	return csi.VolumeHealthErrorType(v), nil
}

// volumeHealth is what the backend knows is wrong with a volume of the
// given kind: its backing gone, and what SetVolumeHealth recorded. Empty
// means healthy.
func (d *Driver) volumeHealth(id string, kind volumeKind) ([]*csi.VolumeHealth_VolumeHealthEntry, error) {
	var out []*csi.VolumeHealth_VolumeHealthEntry
	path := d.volumePath(id, kind)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		out = append(out, &csi.VolumeHealth_VolumeHealthEntry{Status: csi.VolumeHealthErrorType_INACCESSIBLE,
			Reason: ReasonBackingMissing, Message: fmt.Sprintf("the volume's backing %s %s does not exist", kind, path)})
	} else if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(healthRecordPath(d.root, id))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var c HealthCondition
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("parse health record of %s: %w", id, err)
	}
	st, err := healthStatus(c.Status)
	if err != nil {
		return nil, err
	}
	// The spec forbids two entries with one (status, reason).
	for _, e := range out {
		if e.Status == st && e.Reason == c.Reason {
			return out, nil
		}
	}
	return append(out, &csi.VolumeHealth_VolumeHealthEntry{Status: st, Reason: c.Reason, Message: c.Message}), nil
}

// ControllerGetVolumeHealth reports a volume the controller made; an empty
// list of statuses when nothing is wrong, as the spec asks.
func (s *controllerServer) ControllerGetVolumeHealth(_ context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	const method = "ControllerGetVolumeHealth"
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.state.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	entries, err := d.volumeHealth(id, v.kind())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: id, HealthStatuses: entries}}, nil
}

// ControllerListVolumeHealth lists the volumes with an adverse condition
// (the spec's SHOULD: healthy ones are left out), in volume ID order, paged
// by volume ID as ListVolumes is.
func (s *controllerServer) ControllerListVolumeHealth(_ context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	const method = "ControllerListVolumeHealth"
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: max_entries must not be negative, got %d", method, req.GetMaxEntries())
	}
	after := req.GetStartingToken()
	if after != "" && !isVolumeIDWeMake(after) {
		return nil, status.Errorf(codes.Aborted, "%s: starting token %q is not one this plugin returned", method, after)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &csi.ControllerListVolumeHealthResponse{}
	for _, id := range d.volumeIDsAfter(after) {
		entries, err := d.volumeHealth(id, d.state.Volumes[id].kind())
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if len(entries) == 0 {
			continue
		}
		if max := int(req.GetMaxEntries()); max > 0 && len(resp.Entries) == max {
			resp.NextToken = resp.Entries[max-1].VolumeId
			break
		}
		resp.Entries = append(resp.Entries, &csi.VolumeHealth{VolumeId: id, HealthStatuses: entries})
	}
	return resp, nil
}

// NodeGetVolumeHealth reports a volume from the node: the backend is all
// the node plugin knows of it, so a volume missing there is NotFound, as
// the spec says of a volume that does not exist on the node.
func (s *nodeServer) NodeGetVolumeHealth(_ context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	const method = "NodeGetVolumeHealth"
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	for _, p := range []string{req.GetVolumePublishPath(), req.GetStagingTargetPath()} {
		if p != "" && !filepath.IsAbs(p) {
			return nil, status.Errorf(codes.InvalidArgument, "%s: path %q is not absolute", method, p)
		}
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	kind, ok, err := d.volumeKindOf(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	entries, err := d.volumeHealth(id, kind)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: id, HealthStatuses: entries}}, nil
}
