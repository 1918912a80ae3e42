package hostpath

// The Node service's publication: NodePublishVolume and NodeUnpublishVolume.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/csiutil"
)

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	const method = "NodePublishVolume"
	if s.d.cfg.NoStage && !csiutil.IsEphemeral(req.GetVolumeContext()) {
		if err := s.stageForPublish(method, req); err != nil {
			return nil, err
		}
	}
	id, volCap := req.GetVolumeId(), req.GetVolumeCapability()
	target, err := s.d.checkMountRequest(method, id, req.GetTargetPath(), "target path", volCap)
	if err != nil {
		return nil, err
	}
	if csiutil.IsEphemeral(req.GetVolumeContext()) {
		return s.publishEphemeral(id, target, volCap, req.GetReadonly())
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v (this plugin stages volumes)", method, err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	src, want, err := d.publishSource(req, staging)
	if err != nil {
		return nil, err
	}
	if err := d.checkSingleWriter(method, id, target, volCap.GetAccessMode().GetMode()); err != nil {
		return nil, err
	}
	if src.block {
		// The device node itself reaches the pod. A read-only bind
		// mount of a device node does not stop writes to the device;
		// the pod's runtime enforces read-only devices.
		err = d.publishAt(method, id, src.device, target, src.ident, want, createTargetFile)
	} else {
		err = d.publishAt(method, id, staging, target, src.ident, want, createTargetDir)
	}
	if err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishSource is what a staged volume is published from: the staging
// path's mount, or a block-access volume's device.
type publishSource struct {
	block  bool
	device string
	ident  volumeIdentity
}

// publishSource checks that the volume of req is staged at staging as req
// asks to publish it, and returns where it is published from and the
// publication req asks for. Errors are gRPC statuses. The caller holds
// d.mu.
func (d *Driver) publishSource(req *csi.NodePublishVolumeRequest, staging string) (publishSource, *publishRecord, error) {
	const method = "NodePublishVolume"
	id, volCap := req.GetVolumeId(), req.GetVolumeCapability()
	mode := volCap.GetAccessMode().GetMode()
	src := publishSource{block: volCap.GetBlock() != nil}
	kind, err := d.existingKind(method, id, volCap)
	if err != nil {
		return src, nil, err
	}
	rec, ok := d.state.Staged[id]
	if !ok || rec.StagingPath != staging {
		return src, nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s is not staged at %s", method, id, staging)
	}
	if rec.Block != src.block {
		return src, nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s was staged with access type %s", method, id, accessTypeName(rec.Block))
	}
	want := &publishRecord{
		Readonly:   req.GetReadonly() || isReadOnly(mode) || rec.Readonly || req.GetPublishContext()[PublishContextReadonly] == "true",
		AccessMode: mode.String(),
		Block:      src.block,
	}
	if kind == kindDirectory {
		// A block volume's file system got its mount flags when it was
		// mounted on the staging path, and file system specific ones
		// would not do for a bind mount. A directory volume's staging
		// mount is a plain bind mount.
		want.MountFlags = volCap.GetMount().GetMountFlags()
	}
	if kind == kindBlock {
		if src.device, err = d.publishedDevice(method, id, req.GetPublishContext(), rec.Device); err != nil {
			return src, nil, err
		}
		if src.device != rec.Device {
			return src, nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s was staged with device %s, not %s", method, id, rec.Device, src.device)
		}
	}
	if src.ident, err = d.identify(id, kind, src.device); err != nil {
		return src, nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if !src.block {
		if m, err := mountOf(staging, src.ident); err != nil {
			return src, nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		} else if !m.ours() {
			return src, nil, status.Errorf(codes.FailedPrecondition, "%s: staging path %s no longer holds volume %s", method, staging, id)
		}
	}
	return src, want, nil
}

// checkSingleWriter refuses a second target for a volume published
// single-writer, or published already elsewhere and now asked for
// single-writer. The caller holds d.mu.
func (d *Driver) checkSingleWriter(method, id, target string, mode csi.VolumeCapability_AccessMode_Mode) error {
	for other, p := range d.state.Published[id] {
		if other != target && (mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER ||
			csiutil.ModeFromName(p.AccessMode) == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER) {
			return status.Errorf(codes.FailedPrecondition, "%s: volume %s is single-writer and already published at %s", method, id, other)
		}
	}
	return nil
}

// publishAt bind-mounts source onto target, which createTarget makes if
// it is missing, unless volume id is mounted there already as want asks,
// and records the publication. Errors are gRPC statuses. The caller holds
// d.mu.
func (d *Driver) publishAt(method, id, source, target string, ident volumeIdentity, want *publishRecord, createTarget func(string) error) error {
	targets := d.state.Published[id]
	m, err := mountOf(target, ident)
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if m.mounted {
		if !m.ours() {
			return status.Errorf(codes.AlreadyExists, "%s: target path %s already holds a mount that is not volume %s", method, target, id)
		}
		if have, ok := targets[target]; ok && !have.same(want) {
			return status.Errorf(codes.AlreadyExists, "%s: volume %s is already published at %s with readonly=%t, access mode %s", method, id, target, have.Readonly, have.AccessMode)
		}
	} else {
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			want.CreatedTarget = true
		}
		if err := createTarget(target); err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if err := d.bindMount(source, target, want.Readonly, want.MountFlags); err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	if targets == nil {
		targets = map[string]*publishRecord{}
		d.state.Published[id] = targets
	}
	if have, ok := targets[target]; ok && have.CreatedTarget {
		want.CreatedTarget = true // a repeated publish: still the plugin's
	}
	targets[target] = want
	if err := d.store.save(d.state); err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return nil
}

// createTargetDir creates the directory a volume is bind-mounted onto.
func createTargetDir(target string) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return fmt.Errorf("create target path: %w", err)
	}
	return nil
}

// createTargetFile creates the file a block volume's device is bind-mounted
// onto. The CO creates the parent directory; an empty directory at the
// target itself (left by a CO that treats every target alike) is replaced.
func createTargetFile(target string) error {
	if fi, err := os.Lstat(target); err == nil && fi.IsDir() {
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("target path %s is a directory that cannot be replaced by a file: %w", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create target directory: %w", err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o660)
	if err != nil {
		return fmt.Errorf("create target file: %w", err)
	}
	return f.Close()
}

func accessTypeName(block bool) string {
	if block {
		return "block"
	}
	return "mount"
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	const method = "NodeUnpublishVolume"
	resp, err := s.unpublish(method, req)
	if err == nil && s.d.cfg.NoStage {
		err = s.unstageUnpublished(method, req.GetVolumeId())
	}
	return resp, err
}

// unpublish is NodeUnpublishVolume without the --no-stage unstaging.
func (s *nodeServer) unpublish(method string, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	target, err := checkUnmountRequest(method, id, req.GetTargetPath(), "target path")
	if err != nil {
		return nil, err
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	published, recorded := d.state.Published[id][target]
	device := ""
	if rec, ok := d.state.Staged[id]; ok {
		device = rec.Device
	}
	ident, err := d.identifyExisting(id, device)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if err := d.unmountVolume(method, target, ident, recorded); err != nil {
		return nil, err
	}
	// The CSI spec: "The SP MUST delete the file or directory it created
	// at this path" (csi.proto, NodeUnpublishVolumeRequest.target_path),
	// and only that: a target the plugin did not create (one the CO
	// made, or a path where this volume was never published, which is
	// answered OK as the spec's idempotency asks) stays, with whatever a
	// user keeps there. Remove, not RemoveAll: a created directory that
	// is not empty means something is wrong, and its contents are not
	// the plugin's to delete.
	if recorded && published.CreatedTarget {
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "%s: remove target path: %v", method, err)
		}
	}
	if recorded {
		delete(d.state.Published[id], target)
		if len(d.state.Published[id]) == 0 {
			delete(d.state.Published, id)
		}
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	// An ephemeral volume goes with its last publication.
	if err := d.deleteEphemeralIfUnused(id); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
