package explain

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// callsInFlight adds a finding for each CSI call of the volume to the
// controller plugin or to the node plugin on node that was sent and not
// answered at the snapshot's time (a driver that hangs): whoever sent it
// waits for the driver, and the volume is held where it is.
func (w *walker) callsInFlight(pv *corev1.PersistentVolume, node string) {
	if pv.Spec.CSI == nil {
		return
	}
	ix := w.ix
	for _, c := range ix.inFlight {
		if c.Volume != pv.Spec.CSI.VolumeHandle || (c.Node != "" && c.Node != node) {
			continue
		}
		plugin := "controller plugin"
		if c.Node != "" {
			plugin = "node plugin on " + c.Node
		}
		w.add(Finding{Object: Ref{Kind: KindVolume, Name: pv.Name}, State: fmt.Sprintf("%s in flight for %s", c.Method, roundDuration(ix.now.Sub(c.Sent))),
			Why: fmt.Sprintf("%s sent %s for the volume (handle %s) to driver %s's %s %s, and the driver has not answered: "+
				"until it does, the volume stays as it is, and the sender waits for the answer, or for its own timeout, before it tries again.",
				sender(c.Actor), c.Method, c.Volume, pv.Spec.CSI.Driver, plugin, ix.ago(c.Sent)),
			Next: "Find out why the driver does not answer (its log: csisim run --driver-log FILE); a call that never returns holds the volume."})
	}
}

// sender names the component that sent a call: "The kubelet on node-1",
// "The external-attacher".
func sender(actor string) string {
	if node, ok := strings.CutPrefix(actor, "kubelet:"); ok {
		return "The kubelet on " + node
	}
	if actor == "" {
		return "A component"
	}
	return "The " + actor
}
