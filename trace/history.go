package trace

import (
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/runtime"
)

// CSICall is what a CSI entry's request and answer said, as far as the
// invariants need it.
type CSICall struct {
	// Node is the Kubernetes node of a node service call (the kubelet's
	// node); empty for controller calls.
	Node string
	// NodeID is the CSI node ID: the request's (ControllerPublishVolume,
	// ControllerUnpublishVolume) or, for node service calls, the one the
	// node plugin answered NodeGetInfo with; empty if unknown.
	NodeID string
	// Volume is the request's volume ID; for CreateVolume the ID returned
	// (empty if it failed), and Name the name asked for.
	Volume, Name string
	// Snapshot is the request's snapshot ID (DeleteSnapshot); for
	// CreateSnapshot the ID returned (empty if it failed), and Name the
	// name asked for.
	Snapshot string
	// StagingPath and TargetPath are the request's paths, if it has them.
	StagingPath, TargetPath string
	// AccessMode is the request's CSI access mode, e.g.
	// "SINGLE_NODE_WRITER"; Block says the capability is raw block.
	AccessMode string
	Block      bool
	ReadOnly   bool
	// Ephemeral: a NodePublishVolume of a CSI inline ephemeral volume
	// (its volume context says so), which is never staged nor attached.
	Ephemeral bool
	// MountFlags are the mount flags of the request's volume capability,
	// e.g. the kubelet's SELinux context="..." option.
	MountFlags []string
	// Code is the status the caller got.
	Code codes.Code
	// Capabilities lists the RPC capabilities a successful
	// NodeGetCapabilities or ControllerGetCapabilities answered, e.g.
	// "STAGE_UNSTAGE_VOLUME".
	Capabilities []string
	// StartedAfter is the number of timeline entries there were when the
	// call was sent: the entries before it the caller could have known of.
	// The call's own entry comes when it has returned.
	StartedAfter int
	// Started is when the call was sent, on the recorder's clock.
	Started time.Duration
}

// APIWrite is the object of an API entry.
type APIWrite struct {
	Verb        string // create, update, patch, delete
	Subresource string // "status", "binding" or ""
	Kind        string
	Namespace   string
	Name        string
	// Object is the object as stored after the write (for a removal, as
	// it was last stored). Readers must not modify it.
	Object runtime.Object
	// Removed: the write took the object out of the store.
	Removed bool
}

// DataCheck is what a pod's built-in workload found in one volume.
type DataCheck struct {
	PodUID    string
	Namespace string
	Pod       string
	// Claim is the PersistentVolumeClaim the volume comes from; Volume
	// the PersistentVolume.
	Claim, Volume string
	// Skipped says why the volume was not checked (nothing mounted, a raw
	// block volume); the other fields are then empty.
	Skipped string
	// Wrote: this pod's marker was written (not for a read-only volume).
	Wrote bool
	// Found lists the pod UIDs whose markers for this claim were read back
	// intact; Corrupt those whose markers did not match their checksum.
	Found, Corrupt []string
	// Copied lists the pod UIDs whose markers for other claims were read
	// back intact: data a restore or a clone brought.
	Copied []string
	// Err is what went wrong reading or writing the volume.
	Err string
}
