package realcluster

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/healthmonitor"
)

// The external-health-monitor is the one sidecar this cluster does not run
// as the real binary: the Go module proxy refuses
// github.com/kubernetes-csi/external-health-monitor at every version (403,
// as it does node-driver-registrar), so realkube/build cannot make it. Its
// place is taken by csisim's simulated monitor (sim/healthmonitor) on
// goroutines, as the simulated kubelets take the nodes' place: against the
// real API server, through a recording proxy of its own in front of the
// controller plugin, on wall time with the real sidecar's default flags
// (csi-driver-host-path deploys it with none but --csi-address and
// --leader-election). What a run judges of volume health here is then
// everything around the monitor — the real kube-apiserver's treatment of
// the claim's status.healthStatus (alpha CSIVolumeHealth, off by default),
// the real controllers and sidecars — and not the monitor itself.

// healthMonitorBinary is the real sidecar's binary: the name its CSI calls
// appear under and the first word of its user agent, as for the other
// sidecars.
const healthMonitorBinary = "csi-external-health-monitor-controller"

// healthMonitorActor is the simulated component's name, the end of its
// user agent, as in the simulator (fault.Components).
const healthMonitorActor = "external-health-monitor"

// startHealthMonitor runs the monitor beside the controller plugin at
// ctrlEndpoint until stop is called. A driver that reports neither volume
// health capability makes it exit at start, as the real one does: the
// cluster then runs without it.
func (c *Cluster) startHealthMonitor(ctx context.Context, ctrlEndpoint string) error {
	socket, err := c.sidecarProxy(healthMonitorBinary, ctrlEndpoint)
	if err != nil {
		return err
	}
	// The proxy records the calls; the connection records nothing more.
	conn, err := csiclient.Dial("unix://"+socket, healthMonitorActor, nil)
	if err != nil {
		return err
	}
	c.conns = append(c.conns, conn)
	drv := &controller.Driver{Name: c.cfg.DriverName, Identity: conn.Identity, Controller: conn.Controller,
		GroupController: conn.GroupController}
	log, err := c.logWriter(healthMonitorBinary)
	if err != nil {
		return err
	}
	if err := healthmonitor.Check(ctx, drv); err != nil {
		if errors.Is(err, controller.ErrExitsAtStart) {
			fmt.Fprintf(log, "%s: %v\n", healthMonitorBinary, err)
			return nil
		}
		return fmt.Errorf("%s: %w", healthMonitorBinary, err)
	}
	cs, err := kubernetes.NewForConfig(c.componentConfig(fakekube.UserAgent(healthMonitorBinary, healthMonitorActor)))
	if err != nil {
		return fmt.Errorf("client for %s: %w", healthMonitorBinary, err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	comp, err := healthmonitor.Start(ctx, controller.Deps{Client: cs, Informers: factory, Driver: *drv, Runtime: controller.RealRuntime()})
	if err != nil {
		return fmt.Errorf("%s: %w", healthMonitorBinary, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.stopMonitor = func() { stop(); <-done }
	factory.Start(runCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			c.stopMonitor()
			return fmt.Errorf("%s: the %v informer did not sync", healthMonitorBinary, typ)
		}
	}
	go func() {
		defer close(done)
		controller.RunComponent(runCtx, comp)
		<-runCtx.Done()
		factory.Shutdown()
	}()
	return nil
}

// RunsHealthMonitor says whether the cluster was started with the
// external-health-monitor (Config.HealthMonitor); it implements
// scenarios.HealthMonitored.
func (c *Cluster) RunsHealthMonitor() bool { return c.cfg.HealthMonitor }
