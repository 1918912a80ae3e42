package hostpath

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityServer serves the CSI Identity service, in every mode.
type identityServer struct {
	csi.UnimplementedIdentityServer
	d *Driver
}

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{
		Name:          s.d.cfg.DriverName,
		VendorVersion: VendorVersion,
	}, nil
}

// GetPluginCapabilities reports the controller service only where it is
// served. Topology constraints and online expansion describe the driver as
// a whole, so every process reports them.
func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	resp := &csi.GetPluginCapabilitiesResponse{}
	if s.d.cfg.Mode.servesController() {
		resp.Capabilities = append(resp.Capabilities, service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
			// Where the controller is, so is the group controller
			// (groupcontroller.go): csi-snapshotter and csi-sanity ask
			// this before GroupControllerGetCapabilities.
			service(csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE))
	}
	if !s.d.cfg.NoTopology {
		resp.Capabilities = append(resp.Capabilities, service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS))
	}
	resp.Capabilities = append(resp.Capabilities,
		&csi.PluginCapability{Type: &csi.PluginCapability_VolumeExpansion_{
			VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE},
		}},
	)
	return resp, nil
}

// Probe always reports ready: New has loaded the state before Run starts
// serving, so a process that answers is a process that can work.
func (s *identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
