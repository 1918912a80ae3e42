package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/internal/text"
	"github.com/csisim/csisim/sim/volumeutil"
)

func (w *walker) claim(c *corev1.PersistentVolumeClaim) {
	ix := w.ix
	ref := Ref{Kind: KindClaim, Namespace: c.Namespace, Name: c.Name}
	f := Finding{Object: ref, State: string(c.Status.Phase)}
	if f.State == "" {
		f.State = "Pending"
	}
	if c.DeletionTimestamp != nil {
		w.deletingClaim(c, f)
		return
	}
	switch c.Status.Phase {
	case corev1.ClaimBound:
		f.State = "Bound to " + c.Spec.VolumeName
		if ix.volumes[c.Spec.VolumeName] == nil {
			f.Why = fmt.Sprintf("Its volume %s does not exist.", c.Spec.VolumeName)
			w.add(f)
			return
		}
		if w.modifyingClaim(c, f) {
			return
		}
		// Bound; a pod that uses it may still be waiting for it.
		var waiting []*corev1.Pod
		for _, p := range ix.podList {
			if p.Namespace == c.Namespace && usesClaim(p, c.Name) && !podFinished(p) && !(p.Status.Phase == corev1.PodRunning && allContainersRunning(p)) {
				waiting = append(waiting, p)
			}
		}
		if len(waiting) == 0 {
			f.Why = "The claim is bound: nothing is stuck here."
			w.add(f)
			return
		}
		var names []string
		for _, p := range waiting {
			names = append(names, p.Name)
		}
		f.Why = fmt.Sprintf("The claim is bound; pod %s, which uses it, is not running yet.", strings.Join(names, ", "))
		w.add(f)
		for _, p := range waiting {
			w.explain(Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name})
		}
		return
	case corev1.ClaimLost:
		f.Why = fmt.Sprintf("Its volume %s is gone: the claim cannot be used again.", c.Spec.VolumeName)
		f.Next = "Delete the claim, or restore a volume of that name bound to it."
		w.add(f)
		return
	}
	w.pendingClaim(c, f)
}

// deletingClaim: held by a finalizer.
func (w *walker) deletingClaim(c *corev1.PersistentVolumeClaim, f Finding) {
	ix := w.ix
	f.State = fmt.Sprintf("Terminating (deleted %s)", ix.ago(c.DeletionTimestamp.Time))
	if len(c.Finalizers) == 0 {
		f.Why = "The claim is being removed."
		w.add(f)
		return
	}
	f.Why = "Held by its finalizers."
	var users []*corev1.Pod
	var snapshots []Ref
	for _, fin := range c.Finalizers {
		switch fin {
		case volumeutil.PVCProtectionFinalizer:
			// The pvc-protection controller keeps it while a scheduled
			// pod that may still run uses the claim (kubernetes
			// pkg/controller/volume/pvcprotection).
			for _, p := range ix.podList {
				if p.Namespace == c.Namespace && p.Spec.NodeName != "" && !podFinished(p) && !forceDeleted(p) && usesClaim(p, c.Name) {
					users = append(users, p)
				}
			}
			if len(users) > 0 {
				var names []string
				for _, p := range users {
					names = append(names, p.Name+" ("+podState(p)+")")
				}
				f.Why += fmt.Sprintf(" %s: the pvc-protection controller removes it once no pod uses the claim, and pod %s still does.", fin, strings.Join(names, ", "))
				f.Next = "Delete the pods that use the claim, or let them finish."
			} else {
				f.Why += fmt.Sprintf(" %s: no pod uses the claim any more, so the pvc-protection controller (kube-controller-manager) removes it at its next sync.", fin)
			}
		case volumeutil.PVCAsSourceFinalizer:
			f.Why += fmt.Sprintf(" %s: the snapshot-controller removes it once no VolumeSnapshot of the claim is being taken.", fin)
			for _, vs := range ix.snapshots {
				if vs.Namespace == c.Namespace && vs.Spec.Source.PersistentVolumeClaimName != nil && *vs.Spec.Source.PersistentVolumeClaimName == c.Name &&
					(vs.Status == nil || vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse) {
					snapshots = append(snapshots, Ref{Kind: KindVolumeSnapshot, Namespace: vs.Namespace, Name: vs.Name})
				}
			}
		default:
			f.Why += fmt.Sprintf(" %s: not one of Kubernetes' own; whoever set it must remove it.", fin)
		}
	}
	w.add(f)
	for _, p := range users {
		if p.DeletionTimestamp != nil {
			w.explain(Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name})
		}
	}
	for _, r := range snapshots {
		w.explain(r)
	}
}

func forceDeleted(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
}

// pendingClaim: not bound yet. Statically bound, waiting for its first
// consumer, or waiting for a provisioner.
func (w *walker) pendingClaim(c *corev1.PersistentVolumeClaim, f Finding) {
	ix := w.ix
	if e := ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "ProvisioningFailed", "FailedBinding"); e != nil {
		f.Said = append(f.Said, said(e))
	}
	if c.Spec.VolumeName != "" {
		pv := ix.volumes[c.Spec.VolumeName]
		switch {
		case pv == nil:
			f.Why = fmt.Sprintf("The claim asks for the volume %s by name (spec.volumeName), which does not exist.", c.Spec.VolumeName)
			f.Next = fmt.Sprintf("Create PersistentVolume %s, or clear spec.volumeName (a new claim).", c.Spec.VolumeName)
		case pv.Spec.ClaimRef != nil && (pv.Spec.ClaimRef.Name != c.Name || pv.Spec.ClaimRef.Namespace != c.Namespace):
			f.Why = fmt.Sprintf("The claim asks for volume %s, which is bound to claim %s/%s.", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		default:
			f.Why = fmt.Sprintf("The claim asks for volume %s; the PV controller binds them at its next sync unless they do not match (class, access modes, size).", pv.Name)
		}
		w.add(f)
		return
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName == "" {
		f.Why = "The claim has no storage class: only an existing PersistentVolume that matches it (class, access modes, size, selector) can bind it; none does."
		f.Next = "Create a matching PersistentVolume, or give the claim a storage class that provisions."
		w.add(f)
		return
	}
	className := *c.Spec.StorageClassName
	class := ix.classes[className]
	if class == nil {
		f.Why = fmt.Sprintf("Its storage class %s does not exist, so nothing provisions a volume for it.", className)
		f.Next = fmt.Sprintf("Create the StorageClass %s or fix spec.storageClassName (immutable: a new claim).", className)
		w.add(f)
		return
	}
	wffc := class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if wffc && c.Annotations[storagehelpers.AnnSelectedNode] == "" {
		f.State = "Pending (WaitForFirstConsumer)"
		if e := ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "WaitForFirstConsumer"); e != nil {
			f.Said = append(f.Said, said(e))
		}
		f.Why = fmt.Sprintf("Its class %s binds at the first consumer (volumeBindingMode: WaitForFirstConsumer): the volume is made only when the scheduler has picked a node "+
			"for a pod that uses the claim and written it into the claim (%s).", className, storagehelpers.AnnSelectedNode)
		var consumers []*corev1.Pod
		for _, p := range ix.podList {
			if p.Namespace == c.Namespace && usesClaim(p, c.Name) && !podFinished(p) {
				consumers = append(consumers, p)
			}
		}
		if len(consumers) == 0 {
			f.Why += " No pod uses the claim."
			f.Next = "Create a pod that uses the claim; that is what this binding mode waits for."
			w.add(f)
			return
		}
		w.add(f)
		for _, p := range consumers {
			w.explain(Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name})
		}
		return
	}
	w.provisioning(c, class, f)
}

// provisioning: the claim waits for the external-provisioner its class
// names.
func (w *walker) provisioning(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, f Finding) {
	ix := w.ix
	prov := class.Provisioner
	failed := ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "ProvisioningFailed")
	if failed == nil {
		if e := ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "ExternalProvisioning"); e != nil {
			f.Said = append(f.Said, said(e))
		}
	}
	node := c.Annotations[storagehelpers.AnnSelectedNode]
	where := ""
	if node != "" {
		where = fmt.Sprintf(" for node %s (selected by the scheduler)", node)
	}
	if !w.driverKnown(prov) {
		f.Why = fmt.Sprintf("Its class %s names the provisioner %s, and nothing shows a driver of that name here: no node registers it (CSINode), "+
			"no volume was provisioned by it, no external-provisioner of it reported events. The PV controller hands the claim to that provisioner and waits.",
			class.Name, prov)
		known := w.knownDrivers()
		if len(known) > 0 {
			f.Why += " Drivers seen: " + strings.Join(known, ", ") + "."
			if near := nearest(prov, known); near != "" {
				f.Next = fmt.Sprintf("Did you mean %s? Fix the class's provisioner (a new class: it is immutable) and make the claim again.", near)
			}
		}
		if f.Next == "" {
			f.Next = fmt.Sprintf("Deploy the CSI driver %s with its external-provisioner (csi-provisioner), or fix the class's provisioner.", prov)
		}
		w.add(f)
		return
	}
	// A restore or a clone waits for its source too.
	var source *Ref
	if ds := c.Spec.DataSource; ds != nil {
		switch ds.Kind {
		case "VolumeSnapshot":
			source = &Ref{Kind: KindVolumeSnapshot, Namespace: c.Namespace, Name: ds.Name}
		case "PersistentVolumeClaim":
			source = &Ref{Kind: KindClaim, Namespace: c.Namespace, Name: ds.Name}
		}
	}
	switch {
	case failed != nil:
		f.Why = fmt.Sprintf("The external-provisioner of %s tries to make its volume%s and fails; it retries with its backoff.", prov, where)
		f.Next = "The provisioner's message above is the cause: fix that (class parameters, secrets, the driver's capacity or topology)."
		if source != nil {
			f.Why += fmt.Sprintf(" The volume is made from %s.", source)
			f.Next = "The provisioner's message above is the cause; the source is below."
		}
	case ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "Provisioning") != nil:
		f.Why = fmt.Sprintf("The external-provisioner of %s is making its volume%s (CreateVolume).", prov, where)
	default:
		f.Why = fmt.Sprintf("The claim waits for the external-provisioner of %s to make its volume%s; it has not reported anything yet.", prov, where)
		f.Next = fmt.Sprintf("Is the csi-provisioner sidecar of %s running?", prov)
	}
	w.add(f)
	if source != nil && w.exists(*source) {
		w.explain(*source)
	}
}

// driverKnown: some evidence that a driver of that name runs.
func (w *walker) driverKnown(name string) bool {
	return slices.Contains(w.knownDrivers(), name)
}

// knownDrivers are the drivers the snapshot shows running: registered on
// a node, named as the provisioner of a PV, or reporting events
// (an external-provisioner's event source is "<driver>_<identity>").
func (w *walker) knownDrivers() []string {
	set := map[string]bool{}
	for _, n := range w.ix.csiNodes {
		for _, d := range n.Spec.Drivers {
			set[d.Name] = true
		}
	}
	for _, pv := range w.ix.volumes {
		if p := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; p != "" {
			set[p] = true
		}
	}
	for _, e := range w.ix.events {
		if d, _, ok := strings.Cut(e.Source, "_"); ok && e.Regarding.Kind == "PersistentVolumeClaim" {
			set[d] = true
		}
	}
	var out []string
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// nearest is the known name within two edits of name, "" if none.
func nearest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := text.EditDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
