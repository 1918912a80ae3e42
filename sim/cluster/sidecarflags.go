package cluster

// The first driver's sidecars as the driver's own manifests configure them
// (Config.Deploy): a sidecar container of the controller's Deployment or
// StatefulSet gives the simulated sidecar of its image the flags csisim
// models (controller.SidecarFlags); one that would exit at start or never
// reach its driver is not run. Without a container of its image the
// simulated sidecar runs with the real defaults, as without --deploy.

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/kubelet"
)

// containerExits is how the kubelets learn that a sidecar container's
// binary exits soon after it starts for its flags (manifests.ContainerExit),
// so that its container crash-loops as the real one does; nil (every container
// runs) without a deployment.
func (c *Cluster) containerExits() func(*corev1.Pod, *corev1.Container, time.Time) *kubelet.ContainerExit {
	if c.cfg.Deploy == nil {
		return nil
	}
	return func(pod *corev1.Pod, ctr *corev1.Container, now time.Time) *kubelet.ContainerExit {
		exit := manifests.ContainerExit(&pod.Spec, ctr, pod.Namespace, now)
		if exit == nil {
			return nil
		}
		out := &kubelet.ContainerExit{Code: exit.Code, After: exit.After}
		for _, l := range exit.Stderr {
			out.Stderr = append(out.Stderr, kubelet.OutputLine{After: l.After, Text: l.Text})
		}
		return out
	}
}

// deploySidecar is the sidecar container of the deployment that s, a
// component of the first driver, stands for; nil without one.
func (c *Cluster) deploySidecar(s *componentSpec, d *driver) *manifests.Sidecar {
	if c.cfg.Deploy == nil || s.binary == "" || d == nil || d.extra() {
		return nil
	}
	return c.cfg.Deploy.Sidecar(s.binary)
}

// sidecarDown says why the simulated sidecar s of driver d is not run
// ("" if it is): its container's flags stop the real one.
func (c *Cluster) sidecarDown(s *componentSpec, d *driver) string {
	if sc := c.deploySidecar(s, d); sc != nil {
		return sc.Down()
	}
	return ""
}

// sidecarFlags are the settings the deployment's container gives the
// simulated sidecar s of driver d; zero (the defaults) without one.
func (c *Cluster) sidecarFlags(s *componentSpec, d *driver) controller.SidecarFlags {
	sc := c.deploySidecar(s, d)
	if sc == nil {
		return controller.SidecarFlags{}
	}
	return flagsOf(sc)
}

// flagsOf reads the modelled flags of a sidecar container. The
// external-resizer's --timeout, set explicitly, overrides its
// --resize-timeout and --modify-timeout (cmd/csi-resizer/main.go
// resolveOperationTimeouts).
func flagsOf(sc *manifests.Sidecar) controller.SidecarFlags {
	f := controller.SidecarFlags{Timeout: sc.Duration("timeout"), RetryIntervalStart: sc.Duration("retry-interval-start"),
		RetryIntervalMax: sc.Duration("retry-interval-max")}
	switch sc.Image {
	case "csi-provisioner":
		f.ExtraCreateMetadata, f.DefaultFSType = sc.Bool("extra-create-metadata"), sc.Value("default-fstype")
	case "csi-resizer":
		if !sc.IsSet("timeout") {
			f.Timeout, f.ModifyTimeout = sc.Duration("resize-timeout"), sc.Duration("modify-timeout")
		} else {
			f.ModifyTimeout = f.Timeout
		}
	}
	return f
}
