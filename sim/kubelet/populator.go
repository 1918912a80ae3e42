package kubelet

// The desired-state-of-world populator: it takes a pod's volumes into the
// desired state (desired_state_of_world.go) — models kubernetes
// pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go.
//
// The real one loops every 100 ms over the pods the kubelet has, adding
// the volumes of each pod it has not processed yet and removing the pods
// whose containers have stopped. The simulated one takes a pod in when its
// pod worker syncs it (populatePod, from the reconciler's setUp), and the
// pod worker removes the pod once its containers have stopped
// (syncTerminatingPod, pod_workers.go). It also has the real populator's
// error messages
// (processVolumes), which the pod worker's "Unable to attach or mount
// volumes" event carries (sync_pending_pod.go).

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// errNoPluginMatched is the volume plugin manager's answer for a spec no
// plugin supports (kubernetes pkg/volume/plugins.go: ErrNoPluginMatched).
var errNoPluginMatched = errors.New("no volume plugin matched")

// volumeToMount is one CSI volume of a pod, resolved through its claim.
type volumeToMount struct {
	name   string // the pod volume's name (its inner volume spec name)
	pv     *corev1.PersistentVolume
	unique corev1.UniqueVolumeName
	// readOnly is the pod's persistentVolumeClaim.readOnly: what the
	// kubelet passes as NodePublishVolume's readonly.
	readOnly bool
	block    bool
	// claimSize is the claim's status.capacity.
	claimSize resource.Quantity
	// seLinux is the SELinux label the volume is mounted with, "" for
	// none (selinux.go).
	seLinux string
	// inline: a pod's inline in-tree volume translated to its migrated
	// driver's (InlineVolumeSpecForCSIMigration): it has no claim, and
	// the kubelet never expands it.
	inline bool
}

// resolveVolumes finds each PVC volume's PV. A claim that is not bound yet
// makes the pod wait.
func (k *Kubelet) resolveVolumes(pod *corev1.Pod) ([]volumeToMount, error) {
	var out []volumeToMount
	for _, v := range pod.Spec.Volumes {
		// A volume no container uses is not set up (nor waited for).
		if !volumeutil.UsedByContainers(pod, v.Name) {
			continue
		}
		// An inline in-tree volume of a plugin that migrated is its CSI
		// driver's volume, with no claim (createVolumeSpec).
		if pv, migrated, err := migration.Inline(&v, pod.Namespace); migrated {
			if err != nil {
				return nil, err
			}
			if m, ok := k.toMount(pod, v.Name, pv, false, resource.Quantity{}); ok {
				m.inline = true
				out = append(out, m)
			}
			continue
		}
		// A generic ephemeral volume is its claim <pod>-<volume>, once
		// the ephemeral volume controller has made it for this pod.
		claimName, readOnly := "", false
		switch {
		case v.PersistentVolumeClaim != nil:
			claimName, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
		case v.Ephemeral != nil:
			claimName = ephemeral.VolumeClaimName(pod, &v)
		default:
			continue
		}
		claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(claimName)
		if err != nil || claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
			return nil, errNotReady
		}
		if v.Ephemeral != nil && ephemeral.VolumeIsForPod(pod, claim) != nil {
			return nil, errNotReady
		}
		pv, err := k.volumes.Get(claim.Spec.VolumeName)
		if err != nil {
			return nil, errNotReady
		}
		if pv, _, err = migration.PV(pv); err != nil {
			return nil, err
		}
		if pv.Spec.CSI == nil {
			return nil, fmt.Errorf("volume %s of pod %s/%s is not a CSI volume", pv.Name, pod.Namespace, pod.Name)
		}
		if m, ok := k.toMount(pod, v.Name, pv, readOnly, claim.Status.Capacity.Storage().DeepCopy()); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// toMount is a pod's CSI volume pv (a claim's, or an inline in-tree
// volume translated) to be mounted for the pod volume name; ok is false
// for one the desired state does not take in (its SELinux label
// conflicts: the populator's error, processVolumes, is what the pod
// worker reports).
func (k *Kubelet) toMount(pod *corev1.Pod, name string, pv *corev1.PersistentVolume, readOnly bool, claimSize resource.Quantity) (volumeToMount, bool) {
	unique := attachdetach.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
	label, err := k.volumeSELinuxLabel(pod, name, pv, unique)
	if err != nil {
		return volumeToMount{}, false
	}
	return volumeToMount{name: name, pv: pv, unique: unique,
		readOnly:  readOnly,
		block:     pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
		claimSize: claimSize, seLinux: label}, true
}

// populatePod takes the pod's claim volumes into the desired state, with
// the size each is wanted at (AddPodToVolume, UpdatePersistentVolumeSize)
// and, unless the node knows it, the size it has (the claim's
// status.capacity: InitializeClaimSize). A claim that is not bound yet
// makes the pod wait, and takes nothing in.
func (k *Kubelet) populatePod(pod *corev1.Pod) ([]volumeToMount, error) {
	vols, err := k.resolveVolumes(pod)
	if err != nil {
		return nil, err
	}
	var uniques []corev1.UniqueVolumeName
	labels := map[corev1.UniqueVolumeName]string{}
	for _, v := range vols {
		uniques = append(uniques, v.unique)
		labels[v.unique] = v.seLinux
	}
	k.desired.setPodVolumes(pod.UID, uniques, labels)
	for _, v := range vols {
		k.noteSizes(v)
	}
	return vols, nil
}

// removePod takes a terminated pod out of the desired state
// (findAndRemoveDeletedPods for one pod): the pod worker calls it once the
// pod's containers have stopped, as the real populator removes a pod whose
// runtime may be removed (ShouldPodRuntimeBeRemoved). Its volumes are then
// unmounted by the reconciler; those it still has stay in use through the
// actual state (volumesInUse).
func (k *Kubelet) removePod(uid types.UID) {
	k.desired.deletePod(uid)
}

// noteSizes records the size a pod wants its volume at (its PV's
// capacity, for a writable claim) and the claim's size as the size the
// volume has if the node knows none yet.
func (k *Kubelet) noteSizes(v volumeToMount) {
	if v.inline {
		return // only a claim's volume is resized (UpdatePersistentVolumeSize)
	}
	k.desired.updateSize(v.unique, v.pv.Spec.Capacity.Storage().DeepCopy(), v.readOnly)
	k.actual.initializeClaimSize(v.unique, v.claimSize)
}

// refreshSizes is a periodic pod sync's look at the pod's mounted
// volumes: the desired sizes are read again from the PVs. It reports
// whether one of them now needs expansion.
func (k *Kubelet) refreshSizes(pod *corev1.Pod) bool {
	vols, err := k.resolveVolumes(pod)
	if err != nil {
		return false
	}
	need := false
	for _, v := range vols {
		if k.actual.mountedVolume(pod.UID, v.pv.Name) == nil {
			continue
		}
		k.noteSizes(v)
		need = need || k.needsExpansion(v.unique)
	}
	return need
}

// processed is what the volume manager's populator made of a pod's
// volumes: the volumes the pod's containers use, those it took in (with
// their unique names and whether they need attaching), those it could not
// and why.
type processed struct {
	expected []string // pod volume names used by a container
	volumes  map[string]processedVolume
	failed   []string // sorted
	errs     []string // sorted, unique
}

type processedVolume struct {
	pvName string // "" for a volume without a claim
	unique corev1.UniqueVolumeName
	attach bool
}

// processVolumes takes in the pod's volumes as the real populator does
// (kubernetes pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go):
// only those a container mounts or uses as a device; a claim's must be
// bound, not being deleted without protection, to a PV that is bound to
// it, in the volume mode the container uses it in. Its error messages are
// the populator's.
func (k *Kubelet) processVolumes(pod *corev1.Pod) processed {
	mounts, devices := sets.New[string](), sets.New[string]()
	visit := func(c corev1.Container) {
		for _, m := range c.VolumeMounts {
			mounts.Insert(m.Name)
		}
		for _, d := range c.VolumeDevices {
			devices.Insert(d.Name)
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		visit(c)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(corev1.Container(c.EphemeralContainerCommon))
	}
	p := processed{volumes: map[string]processedVolume{}}
	errs := sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if !mounts.Has(v.Name) && !devices.Has(v.Name) {
			continue // not used: the kubelet leaves it alone
		}
		p.expected = append(p.expected, v.Name)
		pv, err := k.processVolume(pod, v, mounts.Has(v.Name), devices.Has(v.Name))
		if err != nil {
			p.failed = append(p.failed, v.Name)
			errs.Insert(err.Error())
			continue
		}
		p.volumes[v.Name] = pv
	}
	slices.Sort(p.failed)
	p.errs = sets.List(errs)
	return p
}

func (k *Kubelet) processVolume(pod *corev1.Pod, v corev1.Volume, mounted, device bool) (processedVolume, error) {
	// An inline in-tree volume of a plugin that migrated: its CSI driver's
	// volume from here on, under the translated volume's name; no volume
	// mode to check (createVolumeSpec checks a claim's only).
	if pv, migrated, err := migration.Inline(&v, pod.Namespace); migrated {
		if err != nil {
			return processedVolume{}, err
		}
		return k.processedCSI(pod, v.Name, pv)
	}
	claimName := ""
	switch {
	case v.PersistentVolumeClaim != nil:
		claimName = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, &v)
	case v.CSI != nil:
		// Inline: mounted under its own name, never attached (inline.go).
		return processedVolume{pvName: v.Name, unique: inlineUniqueName(pod.UID, v.Name)}, nil
	case migration.RemovedInline(&v) != "":
		// A plugin v1.37 removed: AddPodToVolume finds none for the
		// spec, named by the pod volume.
		return processedVolume{}, fmt.Errorf("failed to get Plugin from volumeSpec for volume %q err=%v", v.Name, errNoPluginMatched)
	default:
		return processedVolume{}, nil
	}
	wrap := func(err error) error {
		return fmt.Errorf("error processing PVC %s/%s: %v", pod.Namespace, claimName, err)
	}
	claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(claimName)
	if err != nil {
		// Worded as the API server's answer, which the populator asks.
		if apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), claimName)
		}
		return processedVolume{}, wrap(fmt.Errorf("failed to fetch PVC from API server: %v", err))
	}
	switch {
	case claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, volumeutil.PVCProtectionFinalizer):
		return processedVolume{}, wrap(errors.New("PVC is being deleted"))
	case claim.Status.Phase != corev1.ClaimBound:
		return processedVolume{}, wrap(errors.New("PVC is not bound"))
	case claim.Spec.VolumeName == "":
		return processedVolume{}, wrap(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	if v.Ephemeral != nil {
		if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
			return processedVolume{}, err
		}
	}
	pv, err := k.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(corev1.Resource("persistentvolumes"), claim.Spec.VolumeName)
		}
		return processedVolume{}, wrap(fmt.Errorf("failed to fetch PV %s from API server: %v", claim.Spec.VolumeName, err))
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		return processedVolume{}, wrap(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name))
	case pv.Spec.ClaimRef.UID != claim.UID:
		return processedVolume{}, wrap(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s",
			pv.Name, pv.Spec.ClaimRef.UID, claim.UID))
	}
	// An in-tree volume whose plugin migrated is its CSI driver's, from
	// here on (createVolumeSpec: IsMigratable, TranslateInTreeSpecToCSI);
	// one whose plugin v1.37 removed finds no plugin (AddPodToVolume).
	pv, _, err = migration.PV(pv)
	if err != nil {
		return processedVolume{}, fmt.Errorf("failed to translate in-tree pv to CSI: %v", err)
	}
	if migration.Removed(pv) != "" {
		return processedVolume{}, fmt.Errorf("failed to get Plugin from volumeSpec for volume %q err=%v", pv.Name, errNoPluginMatched)
	}
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	if mounted && mode != corev1.PersistentVolumeFilesystem {
		return processedVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", v.Name, mode)
	}
	if device && mode != corev1.PersistentVolumeBlock {
		return processedVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", v.Name, mode)
	}
	return k.processedCSI(pod, v.Name, pv)
}

// processedCSI is AddPodToVolume of a pod's volume pv (a claim's, or an
// inline in-tree volume translated).
func (k *Kubelet) processedCSI(pod *corev1.Pod, name string, pv *corev1.PersistentVolume) (processedVolume, error) {
	out := processedVolume{pvName: pv.Name}
	if pv.Spec.CSI != nil {
		out.unique = attachdetach.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
		out.attach = k.attachRequired(pv.Spec.CSI.Driver)
		// AddPodToVolume's SELinux checks (selinux.go).
		if _, err := k.volumeSELinuxLabel(pod, name, pv, out.unique); err != nil {
			return processedVolume{}, err
		}
	}
	return out, nil
}

// unmountedVolumes are the expected volumes of the pod not mounted for it
// (those the populator did not take in included), sorted. Volumes without
