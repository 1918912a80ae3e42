package attacher

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/csisim/csisim/sim/csiclient"
)

// ReconcileInterval is how often the sidecar compares VolumeAttachments
// with what the driver reports published (its --reconcile-sync, 1 min).
const ReconcileInterval = time.Minute

// Reconcile is the sidecar's VolumeAttachment reconciler, for drivers with
// the LIST_VOLUMES and LIST_VOLUMES_PUBLISHED_NODES capabilities: it asks
// the driver which nodes each volume is published to (ListVolumes, every
// page) and, for every attachment of its driver whose status.attached
// says otherwise, syncs the attachment again, forced — so a volume the
// backend lost is published again, and one marked detached that the
// backend still has is attached by the usual path. It writes nothing
// itself, to stay out of the way of the attachment queue.
func (a *Attacher) Reconcile(ctx context.Context) {
	if !a.reconciles() {
		return
	}
	published, err := a.publishedNodes(ctx)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("reconciling VolumeAttachments: failed to ListVolumes: %w", err))
		return
	}
	vas, err := a.vas.List(labels.Everything())
	if err != nil {
		return
	}
	sort.Slice(vas, func(i, j int) bool { return vas[i].Name < vas[j].Name })
	for _, va := range vas {
		if va.Spec.Attacher != a.cfg.DriverName {
			continue
		}
		nodeID, err := a.nodeID(va.Spec.NodeName)
		if err != nil {
			recorded, ok := va.Annotations[annNodeID]
			if !ok {
				continue
			}
			nodeID = recorded
		}
		pv, err := a.volumeOf(va)
		if err != nil {
			continue
		}
		found := slices.Contains(published[pv.Spec.CSI.VolumeHandle], nodeID)
		if va.Status.Attached != found {
			a.setForceSync(va.Name)
			a.vaQ.Add(va.Name)
		}
	}
}

// reconciles says whether the sidecar runs its reconciler: for a driver
// it attaches with that has LIST_VOLUMES and LIST_VOLUMES_PUBLISHED_NODES
// (cmd/csi-attacher/main.go supportsListVolumesPublishedNodes; the
// trivial handler's ReconcileVA does nothing).
func (a *Attacher) reconciles() bool {
	caps := a.cfg.Capabilities
	return caps.CanAttach() && caps.Controller[csi.ControllerServiceCapability_RPC_LIST_VOLUMES] &&
		caps.Controller[csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES]
}

// publishedNodes lists every volume with the nodes it is published to,
// page by page.
func (a *Attacher) publishedNodes(ctx context.Context) (map[string][]string, error) {
	published := map[string][]string{}
	token := ""
	for {
		callCtx, cancel := csiclient.WithTimeout(ctx, a.cfg.Timeout)
		resp, err := a.csi.ListVolumes(callCtx, &csi.ListVolumesRequest{StartingToken: token})
		cancel()
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEntries() {
			id := e.GetVolume().GetVolumeId()
			published[id] = append(published[id], e.GetStatus().GetPublishedNodeIds()...)
		}
		if token = resp.GetNextToken(); token == "" {
			return published, nil
		}
	}
}

// setForceSync makes the attachment's next sync attach (or detach) even if
// its status already says it is done.
func (a *Attacher) setForceSync(name string) {
	a.forceMu.Lock()
	defer a.forceMu.Unlock()
	if a.forceSync == nil {
		a.forceSync = map[string]bool{}
	}
	a.forceSync[name] = true
}

// consumeForceSync reports whether the attachment was to be forced, once.
func (a *Attacher) consumeForceSync(name string) bool {
	a.forceMu.Lock()
	defer a.forceMu.Unlock()
	forced := a.forceSync[name]
	delete(a.forceSync, name)
	return forced
}
