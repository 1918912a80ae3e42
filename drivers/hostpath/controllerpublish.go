package hostpath

// The Controller service's publication of volumes to nodes (ControllerPublishVolume,
// ControllerUnpublishVolume): a block volume's loop device is attached here.

import (
	"context"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/csiutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Publish context keys that ControllerPublishVolume fills in.
const (
	// PublishContextNodeKey names the node the volume was published to.
	PublishContextNodeKey = "hostpath.csisim.io/node"
	// PublishContextDevicePath is the loop device of a block volume; the
	// node plugin has no other way to learn it.
	PublishContextDevicePath = "devicePath"
	// PublishContextReadonly is "true" for a read-only publication: the
	// node then mounts the volume read-only.
	PublishContextReadonly = "hostpath.csisim.io/readonly"
)

func (s *controllerServer) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if s.d.cfg.NoAttach {
		return nil, status.Error(codes.Unimplemented, "ControllerPublishVolume: this plugin does not attach volumes (--no-attach)")
	}
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	if err := checkNodeID(nodeID); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	if err := s.d.checkCapability(req.GetVolumeCapability(), ""); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, ok := d.state.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: volume %s does not exist", id)
	}
	node, ok, err := lookupNode(d.root, nodeID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: node %s does not exist (no node plugin has registered it)", nodeID)
	}
	if err := checkVolumeCapability(req.GetVolumeCapability(), v.kind()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	if v.Zone != "" && node.Zone != v.Zone {
		return nil, status.Errorf(codes.FailedPrecondition, "ControllerPublishVolume: volume %s lives in zone %q and is not accessible from node %s in zone %q", id, v.Zone, nodeID, node.Zone)
	}
	want := &controllerPublishRecord{Readonly: req.GetReadonly(), AccessMode: mode.String()}

	have, republish := v.PublishedNodes[nodeID]
	if republish && *have != *want {
		return nil, status.Errorf(codes.AlreadyExists, "ControllerPublishVolume: volume %s is already published to node %s with readonly=%t, access mode %s", id, nodeID, have.Readonly, have.AccessMode)
	}
	if !republish {
		for other, p := range v.PublishedNodes {
			if csiutil.IsSingleNode(mode) || csiutil.IsSingleNode(csiutil.ModeFromName(p.AccessMode)) {
				return nil, status.Errorf(codes.FailedPrecondition, "ControllerPublishVolume: volume %s is published to node %s with access mode %s and cannot also be published to node %s", id, other, p.AccessMode, nodeID)
			}
		}
		if max := node.MaxVolumesPerNode; max > 0 && d.publishedTo(nodeID) >= max {
			return nil, status.Errorf(codes.ResourceExhausted, "ControllerPublishVolume: node %s already has the maximum of %d volumes", nodeID, max)
		}
	}

	resp := &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{PublishContextNodeKey: nodeID}}
	if want.Readonly {
		resp.PublishContext[PublishContextReadonly] = "true"
	}
	// All nodes of a run share one kernel, so one loop device serves every
	// node a multi-node volume is published to. A repeated publish attaches
	// again too: the device may be gone since (a host reboot).
	attachedBefore, dev := "", ""
	if v.kind() == kindBlock {
		if attachedBefore, err = findLoop(d.volumeImage(id)); err != nil {
			return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
		}
		if dev, err = attachLoop(d.volumeImage(id)); err != nil {
			return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
		}
		resp.PublishContext[PublishContextDevicePath] = dev
	}
	if republish && v.LoopDevice == dev {
		return resp, nil
	}

	before, beforeDev := v.PublishedNodes, v.LoopDevice
	v.PublishedNodes = clonePublished(v.PublishedNodes)
	v.PublishedNodes[nodeID] = want
	v.LoopDevice = dev
	if err := d.store.save(d.state); err != nil {
		v.PublishedNodes, v.LoopDevice = before, beforeDev
		if dev != "" && attachedBefore == "" {
			_ = detachLoop(dev) // best effort; a retry attaches again
		}
		return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
	}
	return resp, nil
}

func clonePublished(m map[string]*controllerPublishRecord) map[string]*controllerPublishRecord {
	out := make(map[string]*controllerPublishRecord, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// publishedTo counts the volumes published to a node; the caller holds mu.
func (d *Driver) publishedTo(nodeID string) int64 {
	var n int64
	for _, v := range d.state.Volumes {
		if _, ok := v.PublishedNodes[nodeID]; ok {
			n++
		}
	}
	return n
}

// ControllerUnpublishVolume forgets a publication and, for a block volume
// that is published nowhere else, detaches its loop device. The spec has
// the CO call it only after NodeUnstageVolume; a CO that calls it while the
// device is still mounted gets FailedPrecondition and the publication
// stays, so that the CO retries once the node has let go, the way a cloud
// disk does not detach while in use. Publications to other nodes of a
// multi-node volume share the device, which then stays attached.
func (s *controllerServer) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if s.d.cfg.NoAttach {
		return nil, status.Error(codes.Unimplemented, "ControllerUnpublishVolume: this plugin does not attach volumes (--no-attach)")
	}
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerUnpublishVolume: %v", err)
	}
	if nodeID != "" {
		if err := checkNodeID(nodeID); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ControllerUnpublishVolume: %v", err)
		}
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, ok := d.state.Volumes[id]
	if !ok {
		// Nothing to undo: unpublishing is idempotent, also for volumes
		// deleted since.
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	remaining := map[string]*controllerPublishRecord{}
	for n, p := range v.PublishedNodes {
		// An empty node ID means "from every node".
		if nodeID != "" && n != nodeID {
			remaining[n] = p
		}
	}
	if v.kind() == kindBlock && len(remaining) == 0 {
		// Also when no publication was recorded: a crash between attach
		// and save leaves a device that only this call can clean up.
		if err := d.detachIfUnused("ControllerUnpublishVolume", id); err != nil {
			return nil, err
		}
	}
	if len(remaining) == len(v.PublishedNodes) && (len(remaining) > 0 || v.LoopDevice == "") {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	before, beforeDev := v.PublishedNodes, v.LoopDevice
	v.PublishedNodes = remaining
	if len(remaining) == 0 {
		v.LoopDevice = ""
	}
	if err := d.store.save(d.state); err != nil {
		v.PublishedNodes, v.LoopDevice = before, beforeDev
		return nil, status.Errorf(codes.Internal, "ControllerUnpublishVolume: %v", err)
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (v *volumeRecord) publishedNodeIDs() []string {
	ids := make([]string, 0, len(v.PublishedNodes))
	for n := range v.PublishedNodes {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids
}
