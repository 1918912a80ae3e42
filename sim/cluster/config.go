package cluster

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/timing"
	"github.com/csisim/csisim/trace"
)

// Config describes the cluster to start. The zero value is one node with
// csisim's own driver.
type Config struct {
	// Nodes are the node names; default ["node-1"].
	Nodes []string
	// Zones gives nodes a zone: the topology.kubernetes.io/zone label of
	// the Node, and the zone csisim's driver reports for the node.
	Zones map[string]string
	// SELinux names the nodes whose kernel has SELinux enabled, as the
	// kubelet finds it (selinux.GetEnabled()); the others have it
	// disabled, as most nodes and every node of this machine's real-node
	// runs (containerd with enable_selinux = false). On an enabled node a
	// pod's seLinuxOptions make the kubelet mount the volumes of a driver
	// whose CSIDriver says seLinuxMount: true with -o context=...
	SELinux []string
	// DriverArgs are added to the command line of csisim's own driver, for
	// the controller and every node (e.g. --capacity=10Gi).
	DriverArgs []string
	// DriverName is the name csisim's own driver and the mock are started
	// with; default hostpath.csisim.io. Whatever name the controller
	// plugin reports (GetPluginInfo) is the cluster's driver name, as the
	// real sidecars take it, so a third-party driver's own name needs no
	// flag.
	DriverName string
	// Driver is how to start a driver plugin, for the controller plugin
	// and for each node's; the zero value runs csisim's own driver from
	// DriverBinary, in controller and node modes.
	Driver launch.Template
	// DriverBinary is the csisim binary for the default driver template
	// and a template's {csisim}; default: this executable.
	DriverBinary string
	// ControllerDriver, if its Path is set, is how to start the controller
	// plugin of the split layout; Driver then starts the node plugins.
	ControllerDriver launch.Template
	// ZoneArgs are added to the node plugin's arguments on a node that has
	// a zone, with {zone} standing for it; csisim's own driver (the zero
	// Driver) gets --zone {zone}.
	ZoneArgs []string
	// Layout is how the driver's processes are laid out: LayoutSplit (the
	// default) or LayoutCombined (layout.go).
	Layout Layout
	// Mock runs the in-memory mock driver instead, in this process but
	// still over gRPC on unix sockets: no mounts, no root needed, for
	// scale runs. The kubelet then does not look for mounts.
	Mock bool
	// NoMounts says the driver mounts nothing (an in-memory test driver
	// such as csi-test's mock): the kubelet then does not look for its
	// mounts, as with Mock.
	NoMounts bool
	// Seed makes the run reproducible: UIDs, generated names and the order
	// in which the loop runs ready work.
	Seed uint64
	// OnEntry, if set, is called for every timeline entry as it is added,
	// from the cluster's first write on.
	OnEntry func(trace.Entry)
	// Realtime makes the virtual clock follow the wall clock and runs the
	// loop in the background, for clusters people use interactively.
	Realtime bool
	// Speed makes a realtime cluster's virtual clock run this many times
	// as fast as the wall clock (0 or 1: as fast); not with Without.
	Speed float64
	// Without names simulated components to leave out, so that their real
	// counterparts can take their place against the API server's HTTP
	// endpoint: external-provisioner, external-attacher, external-resizer,
	// persistentvolume-binder, attachdetach-controller, expand-controller,
	// ephemeral-volume-controller,
	// default-scheduler, snapshot-controller, csi-snapshotter, statefulset-controller,
	// replicaset-controller, deployment-controller, daemonset-controller.
	// It needs Realtime: a real process works on wall time.
	Without []string
	// DaemonSets runs the DaemonSet controller (daemonset-controller).
	// It is off unless asked for — by Deploy, by csisim serve — so that a
	// run that has no DaemonSet keeps the informers, and so the seeded
	// draws, it had before the controller existed.
	DaemonSets bool
	// HealthMonitor runs the external-health-monitor sidecar beside each
	// driver's controller plugin (it exits at start if the driver reports
	// no volume health). It is off unless asked for (a scenario's
	// cluster.healthMonitor), as a deployment adds the sidecar or not, and
	// so that a run without it keeps the seeded draws it had before the
	// sidecar existed.
	HealthMonitor bool
	// Deploy, if set, is the driver's own deployment (csisim run
	// --deploy): its objects are applied once the nodes are up, and the
	// first driver's node plugin is registered with a node's kubelet only
	// while the node DaemonSet's pod there is Running (deploy.go). It
	// turns DaemonSets on.
	Deploy *manifests.Set
	// DriverLog receives the driver processes' output; default: discarded.
	DriverLog io.Writer
	// StartTimeout bounds how long a driver may take to become ready.
	StartTimeout time.Duration
	// EventTTL is how long the API server keeps an Event after its last
	// write (kube-apiserver --event-ttl); default fakekube.DefaultEventTTL.
	EventTTL time.Duration
	// VerifyDriver, if set, is given what the driver says of itself
	// (driverinfo.Info: its name, capabilities, a node's NodeGetInfo) as
	// soon as it has said it, before any component starts; an error
	// stops the start, e.g. a driver profile that claims what the driver
	// does not report (package clusterprofile).
	VerifyDriver func(driverinfo.Info) error
	// ExtraDrivers are more CSI drivers to run beside the first one (the
	// one the fields above describe), as a real cluster runs a block
	// driver beside a file driver: each with its controller plugin and
	// its own sidecars, a node plugin on every node registered with the
	// kubelet, and fault proxies of its own (drivers.go). Each needs a
	// DriverName of its own.
	ExtraDrivers []DriverConfig
	// Timing is the cluster's timing of node loss (package timing): the
	// node lifecycle controller's periods, the pods' default toleration of
	// a lost node, the attach/detach controller's wait for unmount and the
	// kubelets' heartbeats. The zero value is v1.37's.
	Timing timing.Timing
}

// DriverConfig is how to start one CSI driver of the cluster: the fields
// of Config that say so, which describe the first driver.
type DriverConfig struct {
	DriverArgs       []string
	DriverName       string
	Driver           launch.Template
	ControllerDriver launch.Template
	ZoneArgs         []string
	Layout           Layout
	Mock             bool
	NoMounts         bool
	VerifyDriver     func(driverinfo.Info) error
}

// FirstDriver is the first driver's configuration, from the fields of
// cfg that describe it.
func (cfg *Config) FirstDriver() DriverConfig {
	return DriverConfig{DriverArgs: cfg.DriverArgs, DriverName: cfg.DriverName, Driver: cfg.Driver, ControllerDriver: cfg.ControllerDriver,
		ZoneArgs: cfg.ZoneArgs, Layout: cfg.Layout, Mock: cfg.Mock, NoMounts: cfg.NoMounts, VerifyDriver: cfg.VerifyDriver}
}

// Components are the simulated control-plane components, by the user agent
// they write as (and the name Config.Without takes): the components the
// API faults name, and the rows of the table the cluster is built from
// (components.go).
var Components = fault.Components

// complete fills in the defaults and refuses what cannot be started.
func (cfg *Config) complete() error {
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []string{"node-1"}
	}
	if cfg.DriverName == "" {
		cfg.DriverName = hostpath.DefaultDriverName
	}
	if cfg.Deploy != nil {
		cfg.DaemonSets = true
	}
	for _, n := range cfg.SELinux {
		if !slices.Contains(cfg.Nodes, n) {
			return fmt.Errorf("SELinux names node %q, which is not one of the nodes %v", n, cfg.Nodes)
		}
	}
	for _, w := range cfg.Without {
		if !slices.Contains(Components, w) {
			return fmt.Errorf("cannot leave out %q: the simulated components are %v", w, Components)
		}
	}
	if len(cfg.Without) > 0 && !cfg.Realtime {
		return fmt.Errorf("leaving out %v needs a realtime cluster: the real components that replace them run on wall time", cfg.Without)
	}
	if cfg.Speed != 0 && cfg.Speed != 1 && (!cfg.Realtime || len(cfg.Without) > 0) {
		return fmt.Errorf("speed %v needs a realtime cluster with every component simulated: real ones run on wall time", cfg.Speed)
	}
	if err := cfg.Timing.Validate(); err != nil {
		return err
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if err := cfg.FirstDriver().check(); err != nil {
		return err
	}
	names := []string{cfg.DriverName}
	for i, dc := range cfg.ExtraDrivers {
		switch {
		case dc.DriverName == "":
			return fmt.Errorf("extra driver %d: it needs a name of its own", i+1)
		case slices.Contains(names, dc.DriverName):
			return fmt.Errorf("extra driver %d: the cluster runs a driver named %s already; each driver needs a name of its own", i+1, dc.DriverName)
		case len(cfg.Without) > 0:
			return fmt.Errorf("extra driver %s: leaving out %v replaces the first driver's sidecars only; a real sidecar for each driver is not wired", dc.DriverName, cfg.Without)
		}
		if err := dc.check(); err != nil {
			return fmt.Errorf("extra driver %s: %w", dc.DriverName, err)
		}
		names = append(names, dc.DriverName)
	}
	return nil
}
