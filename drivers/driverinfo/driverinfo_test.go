package driverinfo

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakePlugin answers the questions Ask asks; a nil controller answer is
// a driver whose controller service must not be asked.
type fakePlugin struct {
	csi.IdentityClient
	csi.ControllerClient
	csi.NodeClient
	csi.GroupControllerClient
	services   []csi.PluginCapability_Service_Type
	group      []csi.GroupControllerServiceCapability_RPC_Type
	askedGroup bool
	controller []csi.ControllerServiceCapability_RPC_Type
	node       []csi.NodeServiceCapability_RPC_Type
	askedCtrl  bool
}

func (f *fakePlugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest, ...grpc.CallOption) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "nfs.example.com", VendorVersion: "v4"}, nil
}

func (f *fakePlugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest, ...grpc.CallOption) (*csi.GetPluginCapabilitiesResponse, error) {
	resp := &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{Type: &csi.PluginCapability_VolumeExpansion_{
		VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_OFFLINE}}}}}
	for _, s := range f.services {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{Type: &csi.PluginCapability_Service_{
			Service: &csi.PluginCapability_Service{Type: s}}})
	}
	return resp, nil
}

func (f *fakePlugin) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.ControllerGetCapabilitiesResponse, error) {
	f.askedCtrl = true
	if f.controller == nil {
		return nil, status.Error(codes.Unimplemented, "no controller service")
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, t := range f.controller {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

func (f *fakePlugin) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	f.askedGroup = true
	resp := &csi.GroupControllerGetCapabilitiesResponse{}
	for _, t := range f.group {
		resp.Capabilities = append(resp.Capabilities, &csi.GroupControllerServiceCapability{Type: &csi.GroupControllerServiceCapability_Rpc{
			Rpc: &csi.GroupControllerServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

func (f *fakePlugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest, ...grpc.CallOption) (*csi.NodeGetCapabilitiesResponse, error) {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range f.node {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return resp, nil
}

func (f *fakePlugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest, ...grpc.CallOption) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: "node-1", MaxVolumesPerNode: 4,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{"zone": "a"}}}, nil
}

func TestAsk(t *testing.T) {
	f := &fakePlugin{services: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE},
		controller: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME},
		node:       []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}}
	info, err := Ask(context.Background(), Plugin{Identity: f, Controller: f}, &Plugin{Node: f})
	if err != nil {
		t.Fatal(err)
	}
	want := "nfs.example.com v4; plugin: CONTROLLER_SERVICE, VolumeExpansion OFFLINE; controller: CREATE_DELETE_VOLUME; " +
		"node: GET_VOLUME_STATS; NodeGetInfo: node_id node-1, topology zone=a, max_volumes_per_node 4"
	if got := info.String(); got != want {
		t.Fatalf("Ask =\n%s\nwant\n%s", got, want)
	}
	if !info.Asked() || !info.HasControllerService() || info.CanAttach() {
		t.Fatalf("asked %v, controller service %v, attach %v", info.Asked(), info.HasControllerService(), info.CanAttach())
	}
}

// A driver without CONTROLLER_SERVICE is not asked for its controller
// capabilities, as the external-attacher does not ask them.
func TestAskWithoutControllerService(t *testing.T) {
	f := &fakePlugin{}
	info, err := Ask(context.Background(), Plugin{Identity: f, Controller: f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.askedCtrl || info.Controller != nil || info.CanAttach() || info.NodeInfo != nil {
		t.Fatalf("asked the controller %v; info %s", f.askedCtrl, info)
	}
	if (Info{}).Asked() {
		t.Fatal("the zero Info says it was asked")
	}
}

// The group controller is asked only of a plugin that reports
// GROUP_CONTROLLER_SERVICE.
func TestAskGroupController(t *testing.T) {
	group := []csi.GroupControllerServiceCapability_RPC_Type{csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT}
	f := &fakePlugin{services: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE, csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE},
		controller: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT}, group: group}
	info, err := Ask(context.Background(), Plugin{Identity: f, Controller: f, GroupController: f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "nfs.example.com v4; plugin: CONTROLLER_SERVICE, GROUP_CONTROLLER_SERVICE, VolumeExpansion OFFLINE; controller: CREATE_DELETE_SNAPSHOT; group controller: CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"
	if got := info.String(); got != want {
		t.Fatalf("Ask =\n%s\nwant\n%s", got, want)
	}
	without := &fakePlugin{services: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}, controller: f.controller, group: group}
	info, err = Ask(context.Background(), Plugin{Identity: without, Controller: without, GroupController: without}, nil)
	if err != nil || without.askedGroup || info.Group != nil {
		t.Fatalf("a plugin without GROUP_CONTROLLER_SERVICE: asked %v, info %s, %v", without.askedGroup, info, err)
	}
}
