package kubelet

// SELinux mounts: the label a volume is mounted with (-o context=...) on a
// node whose kernel has SELinux enabled, and the conflict when two pods on
// the node want one volume with different labels. Models v1.37's
// pkg/volume/util/selinux.go (GetMountSELinuxLabel,
// VolumeSupportsSELinuxMount, AddSELinuxMountOption),
// pkg/volume/util/util.go (GetPodVolumeNames collects each container's
// effective seLinuxOptions), pkg/kubelet/volumemanager/cache/
// desired_state_of_world.go (AddPodToVolume's conflict) and the CSI
// plugin's use of the label (pkg/volume/csi/csi_attacher.go MountDevice,
// csi_mounter.go SetUpAt).
//
// In v1.37 SELinuxMountReadWriteOncePod and SELinuxChangePolicy are GA and
// locked on, and SELinuxMount went GA and on by default
// (pkg/features/kube_features.go): every persistent volume (a claim's PV,
// a generic ephemeral volume's) of a driver whose CSIDriver says
// seLinuxMount: true qualifies, whatever its access modes; a CSI inline
// volume never does (it has no PV), and its label errors only count as
// warnings, so the simulated inline path (inline.go) passes no label.
//
// The real kubelet asks the host whether SELinux is enabled
// (selinux.GetEnabled()); the simulated one's node says so in its Config
// (SELinuxEnabled). On a node without it, the fields change nothing.
//
// Not modelled: kube-controller-manager's selinux-warning-controller, which
// v1.37 registers disabled by default (cmd/kube-controller-manager/app/
// core.go: isDisabledByDefault), and so emits no SELinuxLabel conflict
// events on a default cluster.

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The file label the container runtime's SELinux policy gives a
// container's files (container-selinux's lxc_contexts file context,
// which go-selinux's label.InitLabels starts from): the role and type
// never come from the pod, only the user and the level.
const (
	defaultSELinuxUser = "system_u"
	fileSELinuxRole    = "object_r"
	fileSELinuxType    = "container_file_t"
	// mcsCategories is how many categories go-selinux draws a level's two
	// from (CategoryRange) when the pod gives no level.
	mcsCategories = 1024
)

// seLinuxFileLabel is the file label a container with opts gets, as
// label.InitLabels on an SELinux host makes it from the pod's options
// (pkg/volume/util/selinux.go SELinuxOptionsToFileLabel): the user and
// the level replace the defaults; the type and role apply to the process
// only. With no level, go-selinux picks a fresh random pair of categories
// ("s0:cA,cB", A < B) on every call; here the pair is drawn from a hash
// of seed (the pod's UID and the container's name), so that a run is
// repeatable and two containers still get different ones.
func seLinuxFileLabel(opts *corev1.SELinuxOptions, seed string) string {
	if opts == nil || *opts == (corev1.SELinuxOptions{}) {
		return ""
	}
	user := opts.User
	if user == "" {
		user = defaultSELinuxUser
	}
	level := opts.Level
	if level == "" {
		level = randomMCS(seed)
	}
	return fmt.Sprintf("%s:%s:%s:%s", user, fileSELinuxRole, fileSELinuxType, level)
}

// randomMCS is a level of two distinct categories drawn from seed.
func randomMCS(seed string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	sum := h.Sum64()
	c1 := uint32(sum % mcsCategories)
	c2 := uint32((sum / mcsCategories) % (mcsCategories - 1))
	if c2 >= c1 {
		c2++ // distinct from c1
	}
	c1, c2 = min(c1, c2), max(c1, c2)
	return fmt.Sprintf("s0:c%d,c%d", c1, c2)
}

// containerSELinuxLabels are the file labels of the containers (init,
// regular and ephemeral) that mount the pod volume named volume, each
// with its effective seLinuxOptions: the container's own if it has them,
// else the pod's (securitycontext.DetermineEffectiveSecurityContext). A
// container with neither adds nothing; volumeDevices add nothing.
func containerSELinuxLabels(pod *corev1.Pod, volume string) []string {
	var podOpts *corev1.SELinuxOptions
	if sc := pod.Spec.SecurityContext; sc != nil {
		podOpts = sc.SELinuxOptions
	}
	var out []string
	visit := func(name string, sc *corev1.SecurityContext, mounts []corev1.VolumeMount) {
		opts := podOpts
		if sc != nil && sc.SELinuxOptions != nil {
			opts = sc.SELinuxOptions
		}
		if opts == nil || !slices.ContainsFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == volume }) {
			return
		}
		// One entry per mount, as GetPodVolumeNames appends one per
		// volumeMount; a set squashes them below.
		for _, m := range mounts {
			if m.Name == volume {
				out = append(out, seLinuxFileLabel(opts, string(pod.UID)+"/"+name))
			}
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		visit(c.Name, c.SecurityContext, c.VolumeMounts)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.Name, c.SecurityContext, c.VolumeMounts)
	}
	return out
}

// seLinuxInfo is what GetMountSELinuxLabel makes of a volume of a pod.
type seLinuxInfo struct {
	// label is the label to mount the volume with ("" for none): the
	// containers' one label, unless the driver does not support SELinux
	// mounts or the pod opted out (seLinuxChangePolicy: Recursive).
	label string
	// pluginSupports: the CSIDriver says seLinuxMount: true (and the
	// node has SELinux), which makes the desired state compare the labels
	// of the pods that share the volume.
	pluginSupports bool
}

// seLinuxMount is the label the volume named volume of the pod is to be
// mounted with on this node, for a persistent volume of driver. Its
// error is GetMountSELinuxLabel's when the pod's containers give the
// volume more than one label.
func (k *Kubelet) seLinuxMount(pod *corev1.Pod, volume, driver string) (seLinuxInfo, error) {
	if !k.cfg.SELinuxEnabled {
		return seLinuxInfo{}, nil
	}
	info := seLinuxInfo{pluginSupports: k.driverSupportsSELinuxMount(driver)}
	labels := sets.New(containerSELinuxLabels(pod, volume)...)
	switch labels.Len() {
	case 0:
		return info, nil
	case 1:
	default:
		// The real set's order is Go's map order; sorted here, so that a
		// seed gives one message.
		return info, fmt.Errorf("multiple SELinux labels found: %s", strings.Join(sets.List(labels), ","))
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SELinuxChangePolicy != nil && *sc.SELinuxChangePolicy == corev1.SELinuxChangePolicyRecursive {
		// The pod asked the container runtime to relabel its volumes.
		return info, nil
	}
	if info.pluginSupports {
		info.label = sets.List(labels)[0]
	}
	return info, nil
}

// driverSupportsSELinuxMount is the CSI plugin's SupportsSELinuxContextMount:
// the CSIDriver's seLinuxMount, false without a CSIDriver object.
func (k *Kubelet) driverSupportsSELinuxMount(driver string) bool {
	drv, err := k.drivers.Get(driver)
	return err == nil && drv.Spec.SELinuxMount != nil && *drv.Spec.SELinuxMount
}

// volumeSELinuxLabel is the label the pod's volume (pod volume volume, PV
// pv) is to be mounted with, or AddPodToVolume's error: the pod's own
// labels disagree, or another pod on the node has the volume in the
// desired state with another label (the label a volume gets is the first
// pod's; a pod that wants it otherwise waits until that pod is gone).
func (k *Kubelet) volumeSELinuxLabel(pod *corev1.Pod, volume string, pv *corev1.PersistentVolume, u corev1.UniqueVolumeName) (string, error) {
	info, err := k.seLinuxMount(pod, volume, pv.Spec.CSI.Driver)
	if err != nil {
		return "", err
	}
	if !info.pluginSupports {
		return "", nil
	}
	if existing, conflict := k.desired.seLinuxConflict(pod.UID, u, info.label); conflict {
		return "", fmt.Errorf("conflicting SELinux labels of volume %s: %q and %q", pv.Name, existing, info.label)
	}
	return info.label, nil
}

// withSELinuxMountOption adds the context mount option for label to the
// mount flags (AddSELinuxMountOption): double-quoted, so that the commas
// of a level survive mount(8)'s option parsing.
func withSELinuxMountOption(flags []string, label string) []string {
	if label == "" {
		return flags
	}
	return append(slices.Clone(flags), fmt.Sprintf("context=%q", label))
}
