package faultproxy

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/csisim/csisim/drivers/csiutil"
)

// Call is one call that passed through the proxy, as the caller saw it:
// what Config.OnCall gets, and what Describe says of a call a client saw.
type Call struct {
	// Method is the short method name, e.g. "NodeStageVolume"; FullMethod
	// is the gRPC one, "/csi.v1.Node/NodeStageVolume".
	Method, FullMethod string
	// VolumeID is the request's volume ID; for CreateVolume, the ID the
	// driver returned (empty if it failed).
	VolumeID string
	// Name is the requested name of CreateVolume (and CreateSnapshot).
	Name string
	// SnapshotID is the request's snapshot ID (DeleteSnapshot); for
	// CreateSnapshot, the ID the driver answered with, if it succeeded.
	SnapshotID string
	// NodeID is the request's node ID (ControllerPublishVolume,
	// ControllerUnpublishVolume) or, for node service calls, the node
	// the proxy fronts: Config.NodeID, or the last NodeGetInfo answer
	// that passed through; empty if unknown.
	NodeID string
	// StagingPath and TargetPath are the request's paths, if it has them.
	StagingPath, TargetPath string
	// AccessMode is the request's CSI access mode ("SINGLE_NODE_WRITER"),
	// Block whether its capability is raw block, ReadOnly its readonly.
	AccessMode      string
	Block, ReadOnly bool
	// MountFlags are the mount flags of the request's volume capability
	// (of its first, for CreateVolume), e.g. the kubelet's SELinux
	// context="..." option.
	MountFlags []string
	// Ephemeral: a NodePublishVolume of a CSI inline ephemeral volume, by
	// its volume context (csi.storage.k8s.io/ephemeral "true", which the
	// kubelet adds for podInfoOnMount drivers): never staged nor attached.
	Ephemeral bool
	// Request summarises the request's identifying fields; secrets are
	// never included.
	Request string
	// Code and Message are the status the caller got.
	Code    codes.Code
	Message string
	// Duration is how long the call took to answer (or to fail).
	Duration time.Duration
	// Rule is the ID of the rule that fired on the call, "" if none did;
	// Action is what the rule did.
	Rule   string
	Action ActionKind
	// Forwarded says whether the driver saw the call.
	Forwarded bool
	// Capabilities lists the RPC capabilities a successful
	// NodeGetCapabilities, ControllerGetCapabilities or
	// GetPluginCapabilities answered, e.g. "STAGE_UNSTAGE_VOLUME".
	Capabilities []string
}

// Fired reports whether a rule fired on the call.
func (c Call) Fired() bool { return c.Rule != "" }

// String renders the call in one line for logs and failure messages.
func (c Call) String() string {
	var b strings.Builder
	b.WriteString(c.Method)
	if c.Request != "" {
		b.WriteString(" " + c.Request)
	}
	fmt.Fprintf(&b, " -> %s", c.Code)
	if c.Message != "" && c.Code != codes.OK {
		fmt.Fprintf(&b, " %q", c.Message)
	}
	fmt.Fprintf(&b, " in %s", c.Duration.Round(time.Microsecond))
	if c.Rule != "" {
		fmt.Fprintf(&b, " [rule %s: %s", c.Rule, c.Action)
		if !c.Forwarded {
			b.WriteString(", not forwarded")
		}
		b.WriteString("]")
	}
	return b.String()
}

// methodInfo describes one CSI method: its message types, so the proxy can
// read the bytes it forwards, and whether it streams.
type methodInfo struct {
	full, name string
	req, resp  protoreflect.MessageType
	streaming  bool
	// inspectResponse: the answer says something the timeline needs (a
	// new volume's ID, the node ID, capabilities); other answers are
	// forwarded without being decoded.
	inspectResponse bool
}

// inspectsResponse reports whether the timeline needs the answers of a
// method.
func inspectsResponse(name string) bool {
	switch name {
	case "CreateVolume", "CreateSnapshot", "NodeGetInfo", "NodeGetCapabilities", "ControllerGetCapabilities", "GetPluginCapabilities":
		return true
	}
	return false
}

// csiMethods builds the method table from the CSI file descriptor, so every
// service of the spec version csisim is built with is covered without a
// hand-written list.
func csiMethods() (map[string]*methodInfo, error) {
	out := map[string]*methodInfo{}
	svcs := csi.File_csi_proto.Services()
	for i := range svcs.Len() {
		svc := svcs.Get(i)
		ms := svc.Methods()
		for j := range ms.Len() {
			m := ms.Get(j)
			req, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
			if err != nil {
				return nil, fmt.Errorf("CSI method %s: request type: %w", m.FullName(), err)
			}
			resp, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName())
			if err != nil {
				return nil, fmt.Errorf("CSI method %s: response type: %w", m.FullName(), err)
			}
			info := &methodInfo{
				full:      "/" + string(svc.FullName()) + "/" + string(m.Name()),
				name:      string(m.Name()),
				req:       req,
				resp:      resp,
				streaming: m.IsStreamingClient() || m.IsStreamingServer(),
			}
			info.inspectResponse = inspectsResponse(info.name)
			out[info.full] = info
		}
	}
	return out, nil
}

// The getters CSI request messages have in common.
type (
	volumeIDer    interface{ GetVolumeId() string }
	nodeIDer      interface{ GetNodeId() string }
	namer         interface{ GetName() string }
	stagingPather interface{ GetStagingTargetPath() string }
	targetPather  interface{ GetTargetPath() string }
	readonlyer    interface{ GetReadonly() bool }
	capabilityer  interface {
		GetVolumeCapability() *csi.VolumeCapability
	}
	capabilitieser interface {
		GetVolumeCapabilities() []*csi.VolumeCapability
	}
)

// describeRequest fills in what the request says about the call. The
// node ID of a node service call is the proxy's (fronted) node.
func describeRequest(c *Call, info *methodInfo, raw []byte, nodeID string) {
	if info == nil {
		c.Request = "(not a CSI method)"
		return
	}
	if info.streaming {
		c.Request = "(stream)"
		return
	}
	msg := info.req.New().Interface()
	if err := proto.Unmarshal(raw, msg); err != nil {
		// Forwarded all the same: the driver, not the proxy, should
		// be the one to refuse a request.
		c.Request = fmt.Sprintf("(undecodable request: %v)", err)
		return
	}
	describeMessage(c, info.full, msg, nodeID)
}

// Describe is what a call says, from its decoded request and (if it
// succeeded) answer, for recorders that see the messages themselves (a
// client's interceptor) rather than the bytes: Method, VolumeID, Name,
// NodeID, paths, access mode, Request and Capabilities. nodeID is the node
// of a node service call, if known.
func Describe(fullMethod string, req, resp any, nodeID string) Call {
	c := Call{FullMethod: fullMethod, Method: shortName(fullMethod)}
	if msg, ok := req.(proto.Message); ok {
		describeMessage(&c, fullMethod, msg, nodeID)
	}
	if msg, ok := resp.(proto.Message); ok && resp != nil {
		describeAnswer(&c, msg)
	}
	return c
}

// describeMessage fills in what a decoded request says about the call.
func describeMessage(c *Call, full string, msg proto.Message, nodeID string) {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	if r, ok := msg.(namer); ok {
		c.Name = r.GetName()
		add("name", c.Name)
	}
	if r, ok := msg.(volumeIDer); ok {
		c.VolumeID = r.GetVolumeId()
		add("volume", c.VolumeID)
	}
	if r, ok := msg.(*csi.DeleteSnapshotRequest); ok {
		// Kept out of Request, whose text every timeline shows.
		c.SnapshotID = r.GetSnapshotId()
	}
	if r, ok := msg.(nodeIDer); ok {
		c.NodeID = r.GetNodeId()
	} else if strings.HasPrefix(full, "/csi.v1.Node/") {
		c.NodeID = nodeID
	}
	add("node", c.NodeID)
	if r, ok := msg.(stagingPather); ok {
		c.StagingPath = r.GetStagingTargetPath()
		add("staging", c.StagingPath)
	}
	if r, ok := msg.(targetPather); ok {
		c.TargetPath = r.GetTargetPath()
		add("target", c.TargetPath)
	}
	var vc *csi.VolumeCapability
	if r, ok := msg.(capabilityer); ok && r.GetVolumeCapability() != nil {
		vc = r.GetVolumeCapability()
	} else if r, ok := msg.(capabilitieser); ok && len(r.GetVolumeCapabilities()) > 0 {
		vc = r.GetVolumeCapabilities()[0]
	}
	if vc != nil {
		c.AccessMode, c.Block = vc.GetAccessMode().GetMode().String(), vc.GetBlock() != nil
		c.MountFlags = vc.GetMount().GetMountFlags()
		add("access", capabilityString(vc))
	}
	if r, ok := msg.(readonlyer); ok && r.GetReadonly() {
		c.ReadOnly = true
		parts = append(parts, "readonly")
	}
	if r, ok := msg.(*csi.NodePublishVolumeRequest); ok && csiutil.IsEphemeral(r.GetVolumeContext()) {
		c.Ephemeral = true
		parts = append(parts, "ephemeral")
	}
	c.Request = strings.Join(parts, " ")
}

func capabilityString(vc *csi.VolumeCapability) string {
	kind := "mount"
	if vc.GetBlock() != nil {
		kind = "block"
	}
	return vc.GetAccessMode().GetMode().String() + "/" + kind
}

// describeResponse reads what a successful answer says about the call; it
// returns the node ID a NodeGetInfo answer reports, if any.
func describeResponse(c *Call, info *methodInfo, raw []byte) (nodeID string) {
	if info == nil || !info.inspectResponse {
		return ""
	}
	msg := info.resp.New().Interface()
	if err := proto.Unmarshal(raw, msg); err != nil {
		return ""
	}
	return describeAnswer(c, msg)
}

// describeAnswer reads what a decoded successful answer says about the
// call; it returns the node ID a NodeGetInfo answer reports, if any.
func describeAnswer(c *Call, msg proto.Message) (nodeID string) {
	switch r := msg.(type) {
	case *csi.CreateVolumeResponse:
		c.VolumeID = r.GetVolume().GetVolumeId()
	case *csi.CreateSnapshotResponse:
		c.SnapshotID = r.GetSnapshot().GetSnapshotId()
	case *csi.NodeGetInfoResponse:
		return r.GetNodeId()
	case *csi.NodeGetCapabilitiesResponse:
		for _, cp := range r.GetCapabilities() {
			if rpc := cp.GetRpc(); rpc != nil {
				c.Capabilities = append(c.Capabilities, rpc.GetType().String())
			}
		}
	case *csi.ControllerGetCapabilitiesResponse:
		for _, cp := range r.GetCapabilities() {
			if rpc := cp.GetRpc(); rpc != nil {
				c.Capabilities = append(c.Capabilities, rpc.GetType().String())
			}
		}
	case *csi.GetPluginCapabilitiesResponse:
		for _, cp := range r.GetCapabilities() {
			if svc := cp.GetService(); svc != nil {
				c.Capabilities = append(c.Capabilities, svc.GetType().String())
			}
		}
	}
	return ""
}

// shortName is the method name without its service.
func shortName(full string) string { return path.Base(full) }
