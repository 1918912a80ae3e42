// Package healthmonitor is the simulated csi-external-health-monitor-
// controller sidecar as it goes with Kubernetes v1.37 and CSI v1.13: the
// redesigned KEP-1432 (kubernetes-csi/external-health-monitor#376), which
// asks the driver ControllerListVolumeHealth (LIST_VOLUME_HEALTH) or, for
// each bound volume, ControllerGetVolumeHealth (GET_VOLUME_HEALTH), and
// records what the driver reports in the claim's status.healthStatus. It
// makes no events: the earlier monitor's VolumeConditionAbnormal events
// went with CSI's VolumeCondition, and so did its node watcher.
//
// The claim's status.healthStatus is alpha (feature gate CSIVolumeHealth,
// off by default in v1.37, pkg/features/kube_features.go): an API server
// with the gate off drops the field from every write unless the claim had
// it already, so on a default cluster the monitor's writes change nothing
// (fakekube runs the registry strategy that drops it).
//
// A cluster runs it only when asked (Config.HealthMonitor, a scenario's
// cluster.healthMonitor), as a deployment adds the sidecar beside the
// controller plugin; it then exits at start unless the driver reports one
// of the two capabilities.
package healthmonitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
)

// The sidecar's defaults (external-health-monitor
// cmd/csi-external-health-monitor-controller/main.go).
const (
	// ListVolumesInterval is --list-volumes-interval: how often it lists
	// every volume's health, when the driver can.
	ListVolumesInterval = 5 * time.Minute
	// MonitorInterval is --monitor-interval: how often each worker checks
	// the next volume with ControllerGetVolumeHealth.
	MonitorInterval = time.Minute
	// VolumeListAddInterval is --volume-list-add-interval: how often the
	// volumes not in the queue are added to it.
	VolumeListAddInterval = 5 * time.Minute
	// Workers is --worker-threads.
	Workers = 10
	// Timeout is --timeout, of each health call.
	Timeout = 15 * time.Second
	// csiTimeout bounds the calls at start (main.go's csiTimeout).
	csiTimeout = time.Second
)

// ErrNotSupported is the start-up check's verdict on a driver that reports
// neither health capability, or has no controller service: the real
// sidecar logs it and exits.
var ErrNotSupported = errors.New("CSI driver does not support Controller ListVolumeHealth and GetVolumeHealth")

// Check asks the driver what the real sidecar's main asks before it
// starts: the controller service (GetPluginCapabilities), then
// LIST_VOLUME_HEALTH and GET_VOLUME_HEALTH (ControllerGetCapabilities).
func Check(ctx context.Context, d *controller.Driver) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, csiTimeout)
	defer cancel()
	var err error
	if d.Capabilities.Plugin, d.Capabilities.Expansion, err = driverinfo.AskPlugin(callCtx, d.Identity); err != nil {
		return controller.CheckFailed(fmt.Errorf("failed to check whether the CSI driver supports the Plugin Controller Service: %w", err))
	}
	if !d.Capabilities.HasControllerService() {
		return fmt.Errorf("%w: %w: no controller service", controller.ErrExitsAtStart, ErrNotSupported)
	}
	if d.Capabilities.Controller, err = driverinfo.AskController(callCtx, d.Controller); err != nil {
		return controller.CheckFailed(fmt.Errorf("failed to get controller capabilities: %w", err))
	}
	caps := d.Capabilities.Controller
	if !caps[csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH] && !caps[csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH] {
		return fmt.Errorf("%w: %w", controller.ErrExitsAtStart, ErrNotSupported)
	}
	return nil
}

// Start starts the sidecar for d's driver once Check has passed: with
// LIST_VOLUME_HEALTH one list of every volume's health each
// ListVolumesInterval, preferred as the real one prefers it for its cost;
// otherwise its workers' ControllerGetVolumeHealth of one queued volume
// each per MonitorInterval, and the queue topped up each
// VolumeListAddInterval.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	m := newMonitor(d.Driver.Name, d.Client, d.Informers, d.Driver.Controller, d.Runtime.Clock)
	if d.Driver.Capabilities.Controller[csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH] {
		return controller.Component{Periodic: []controller.Periodic{{Every: ListVolumesInterval, Run: m.checkByList}}}, nil
	}
	m.watchVolumes(d.Informers)
	return controller.Component{Periodic: []controller.Periodic{
		{Every: MonitorInterval, Run: m.runWorkers},
		{Every: VolumeListAddInterval, Run: func(context.Context) { m.addAll() }},
	}}, nil
}

// monitor is the sidecar's controller: its listers, its client and its
// connection to the controller plugin.
type monitor struct {
	driver string
	client kubernetes.Interface
	csi    csi.ControllerClient
	clock  clock.PassiveClock
	pvs    corelisters.PersistentVolumeLister
	claims corelisters.PersistentVolumeClaimLister
	queue  *volumeQueue
}

func newMonitor(driver string, client kubernetes.Interface, factory informers.SharedInformerFactory, ctrl csi.ControllerClient, clk clock.PassiveClock) *monitor {
	return &monitor{driver: driver, client: client, csi: ctrl, clock: clk,
		pvs:    factory.Core().V1().PersistentVolumes().Lister(),
		claims: factory.Core().V1().PersistentVolumeClaims().Lister(),
		queue:  newVolumeQueue()}
}

// checkByList is one ListVolumeHealth round: every page of the driver's
// list, then each bound volume of the driver recorded on its claim. A
// volume the list leaves out is healthy (CSI v1.13: the plugin SHOULD
// omit volumes with no adverse condition). A failed list records nothing.
func (m *monitor) checkByList(ctx context.Context) {
	ctx, cancel := csiclient.WithTimeout(ctx, Timeout)
	defer cancel()
	health := map[string][]*csi.VolumeHealth_VolumeHealthEntry{}
	token := ""
	for {
		resp, err := m.csi.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{StartingToken: token})
		if err != nil {
			klog.Errorf("external-health-monitor: check controller volume health: failed to list volume health: %v", err)
			return
		}
		for _, e := range resp.GetEntries() {
			health[e.GetVolumeId()] = e.GetHealthStatuses()
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	for _, pv := range m.boundVolumes() {
		m.record(ctx, pv, health[pv.Spec.CSI.VolumeHandle])
	}
}
