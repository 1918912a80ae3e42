package realcluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realkube"
)

// realSidecars are the real processes of the components sidecar-restart
// names by the user agents of csisim's simulated ones.
var realSidecars = map[string]string{
	"external-provisioner": realkube.CSIProvisioner,
	"external-attacher":    realkube.CSIAttacher,
	"external-resizer":     realkube.CSIResizer,
	"csi-snapshotter":      realkube.CSISnapshotter,
	"snapshot-controller":  realkube.SnapshotController,
}

// canRestartSidecar says whether sidecar-restart can restart the
// component: one of fault.Sidecars that this cluster runs.
func (c *Cluster) canRestartSidecar(component string) error {
	name, ok := realSidecars[component]
	if !ok {
		return fmt.Errorf("%s is not a sidecar sidecar-restart restarts (%v)", component, fault.Sidecars)
	}
	if !slices.Contains(sidecars, name) && !slices.Contains(controllers, name) {
		return fault.Unsupported(fault.SidecarRestart, backendName, fmt.Sprintf("%s does not run here", name))
	}
	return nil
}

// restartSidecar kills the real sidecar's process and starts it again with
// the same flags, as the kubelet restarts a container: it loses what it
// kept in memory and lists everything anew. Its proxy in front of the
// driver stays, as the socket a container finds again.
func (c *Cluster) restartSidecar(ctx context.Context, component string) error {
	if err := c.canRestartSidecar(component); err != nil {
		return err
	}
	name := realSidecars[component]
	i := slices.IndexFunc(c.procs, func(p namedProcess) bool { return p.name == name && p.start != nil })
	if i < 0 {
		return fmt.Errorf("%s is not running", name)
	}
	if err := c.procs[i].Kill(); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	proc, err := c.procs[i].start()
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	c.procs[i].Process = proc
	select {
	case <-proc.Exited():
		return fmt.Errorf("%s exited as it started again; see %s", name, c.root.Path("logs", name+".log"))
	case <-time.After(500 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
