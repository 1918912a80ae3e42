package cluster

import (
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/fault"
)

// plugin is one CSI driver plugin of the cluster — the controller plugin
// or a node's — and the fault proxy in front of it, through which every
// component reaches it. The driver is a process (csisim's own or any
// other, from a template) or, with Config.Mock, the in-process mock.
type plugin struct {
	drv  *driver // whose plugin it is
	role fault.Plugin
	node string // "" for the controller plugin
	// name says which plugin it is in messages: "node plugin on node-1".
	name string
	// driverEndpoint is the driver's own socket, behind the proxy.
	driverEndpoint string
	proxy          *faultproxy.Proxy
	// host, in the combined layout, is the node plugin whose driver the
	// controller plugin is; it has no driver of its own then.
	host *plugin

	// A driver process: how to start it, and the running one.
	template launch.Template
	vars     launch.Vars
	process  *launch.Process

	// The mock: how to make it, and its running server.
	mock       *mock.Config
	mockServer *mock.Server

	// identity is the kubelet's client of a node plugin's identity
	// service, to register the plugin again after a restart.
	identity csi.IdentityClient

	// crashed: driver-crash or node-plugin-missing stopped it and nothing
	// started it again.
	crashed bool
}
