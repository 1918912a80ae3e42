package fidelity

import (
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The volume lifecycle's core kinds (Pod, PersistentVolume,
// PersistentVolumeClaim) for TestValidationAgainstTheRealServer.

var accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany,
	corev1.ReadWriteOncePod, "ReadWriteSometimes"}

// someAccessModes is zero to three access modes, valid or not.
func someAccessModes(r *rand.Rand) []corev1.PersistentVolumeAccessMode {
	var out []corev1.PersistentVolumeAccessMode
	for range r.IntN(4) {
		out = append(out, pick(r, accessModes...))
	}
	return out
}

func storage(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
}

var pvcKind = &kind{name: "PersistentVolumeClaim", gvr: coreV1.WithResource("persistentvolumeclaims"), kind: "PersistentVolumeClaim", namespaced: true,
	empty: func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{pick(r, corev1.ReadWriteOnce, corev1.ReadWriteOncePod, corev1.ReadWriteMany)},
				StorageClassName: ptr(pick(r, "csisim-sc", "fast")),
				Resources:        corev1.VolumeResourceRequirements{Requests: storage(pick(r, "1Gi", "100Mi"))}}}
	},
	create: []mutation{
		mut("access modes", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) { o.Spec.AccessModes = someAccessModes(r) }),
		mut("ReadWriteOncePod with another", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, pick(r, corev1.ReadWriteOnce, corev1.ReadOnlyMany)}
		}),
		mut("request", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			switch r.IntN(4) {
			case 0:
				o.Spec.Resources.Requests = nil
			case 1:
				o.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			default:
				o.Spec.Resources.Requests = storage(pick(r, "0", "-1Gi", "1"))
			}
		}),
		mut("limit", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.Resources.Limits = storage(pick(r, "10Gi", "1Mi"))
		}),
		mut("class name", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.StorageClassName = ptr(pick(r, "", "Bad_Class", "a.b"))
		}),
		mut("volume mode", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(pick(r, "Block", "Filesystem", "Raw")))
		}),
		mut("volume name", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) { o.Spec.VolumeName = pick(r, "pv-1", "Bad_PV") }),
		mut("selector", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{pick(r, "tier", "bad key"): "gold"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOperator(pick(r, "In", "Near")),
					Values: []string{"a"}}}}
		}),
		mut("data source", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			src := &corev1.TypedLocalObjectReference{Kind: pick(r, "PersistentVolumeClaim", "VolumeSnapshot", "", "Pod"), Name: pick(r, "src", "")}
			if src.Kind == "VolumeSnapshot" || r.IntN(3) == 0 {
				src.APIGroup = ptr(pick(r, "snapshot.storage.k8s.io", ""))
			}
			o.Spec.DataSource = src
			if r.IntN(2) == 0 {
				o.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: src.Kind, Name: pick(r, src.Name, "other"), APIGroup: src.APIGroup}
			}
		}),
		mut("attributes class", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.VolumeAttributesClassName = ptr(pick(r, "", "gold", "Bad_VAC"))
		}),
		mut("beta class annotation", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": pick(r, "fast", "other")}
		}),
	},
	update: []mutation{
		mut("access modes", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{pick(r, corev1.ReadOnlyMany, corev1.ReadWriteOncePod)}
		}),
		mut("class name", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) { o.Spec.StorageClassName = ptr("other") }),
		mut("request", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.Resources.Requests = storage(pick(r, "2Gi", "1Mi", "-1"))
		}),
		mut("volume name", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) { o.Spec.VolumeName = pick(r, "pv-2", "Bad_PV") }),
		mut("volume mode", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(pick(r, "Block", "Raw")))
		}),
		mut("attributes class", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) { o.Spec.VolumeAttributesClassName = ptr("gold") }),
	},
	status: []mutation{
		mut("phase", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Status.Phase = corev1.PersistentVolumeClaimPhase(pick(r, "Bound", "Lost", "Bogus"))
		}),
		mut("capacity", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Status.Capacity = corev1.ResourceList{corev1.ResourceName(pick(r, "storage", "cpu")): resource.MustParse(pick(r, "1Gi", "-1Gi"))}
		}),
		mut("allocated", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceName(pick(r, "storage", "cpu", "example.com/iops")): resource.MustParse(pick(r, "2Gi", "-1"))}
		}),
		mut("resize status", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
				corev1.ResourceName(pick(r, "storage", "memory")): corev1.ClaimResourceStatus(pick(r, "NodeResizePending", "ControllerResizeInProgress", "Resizing"))}
		}),
		mut("condition", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimConditionType(pick(r, "Resizing", "")),
				Status: corev1.ConditionStatus(pick(r, "True", "Maybe"))}}
		}),
		mut("spec with status", func(r *rand.Rand, o *corev1.PersistentVolumeClaim) {
			o.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}
			o.Status.Phase = corev1.ClaimBound
		}),
	},
}

var pvKind = &kind{name: "PersistentVolume", gvr: coreV1.WithResource("persistentvolumes"), kind: "PersistentVolume",
	empty: func() runtime.Object { return &corev1.PersistentVolume{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      storage(pick(r, "1Gi", "5Gi")),
				AccessModes:                   []corev1.PersistentVolumeAccessMode{pick(r, corev1.ReadWriteOnce, corev1.ReadWriteMany)},
				PersistentVolumeReclaimPolicy: pick(r, corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeReclaimDelete),
				StorageClassName:              pick(r, "", "csisim-sc"),
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "hostpath.csisim.io", VolumeHandle: "vol-" + name}}}}
	},
	create: []mutation{
		mut("capacity", func(r *rand.Rand, o *corev1.PersistentVolume) {
			switch r.IntN(3) {
			case 0:
				o.Spec.Capacity = nil
			case 1:
				o.Spec.Capacity = storage(pick(r, "0", "-1Gi"))
			default:
				o.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1")
			}
		}),
		mut("access modes", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.AccessModes = someAccessModes(r) }),
		mut("no source", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.CSI = nil }),
		mut("two sources", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp/x"}
		}),
		mut("csi", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.CSI.Driver = pick(r, "", "Bad Driver", "a.b.c", "-bad.example.com")
			o.Spec.CSI.VolumeHandle = pick(r, "", "h")
			if r.IntN(2) == 0 {
				o.Spec.CSI.NodeStageSecretRef = &corev1.SecretReference{Name: pick(r, "s", ""), Namespace: pick(r, "ns", "")}
			}
		}),
		mut("host path", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.CSI = nil
			o.Spec.HostPath = &corev1.HostPathVolumeSource{Path: pick(r, "/data", "relative", "/a/../b", ""),
				Type: ptr(corev1.HostPathType(pick(r, "Directory", "DirectoryOrCreate", "Bogus")))}
			if r.IntN(2) == 0 {
				o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
			}
		}),
		mut("local", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.CSI = nil
			o.Spec.Local = &corev1.LocalVolumeSource{Path: pick(r, "/mnt/disk", "rel", "")}
			if r.IntN(2) == 0 {
				o.Spec.NodeAffinity = nodeAffinity(r)
			}
		}),
		mut("reclaim policy", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(pick(r, "Recycle", "Bogus"))
		}),
		mut("node affinity", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.NodeAffinity = nodeAffinity(r) }),
		mut("claim ref", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.ClaimRef = &corev1.ObjectReference{Name: pick(r, "data", ""), Namespace: pick(r, testNamespace, "")}
		}),
		mut("class name", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.StorageClassName = pick(r, "Bad_Class", "x.y") }),
		mut("mount options", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.MountOptions = []string{pick(r, "ro", "")}
		}),
		mut("volume mode", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode(pick(r, "Block", "Raw")))
		}),
	},
	update: []mutation{
		mut("volume handle", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.CSI.VolumeHandle = "changed" }),
		mut("capacity", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.Capacity = storage(pick(r, "10Gi", "-1")) }),
		mut("volume mode", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock) }),
		mut("reclaim policy", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimPolicy(pick(r, "Delete", "Retain", "Bogus"))
		}),
		mut("class name", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.StorageClassName = "other" }),
		mut("node affinity", func(r *rand.Rand, o *corev1.PersistentVolume) { o.Spec.NodeAffinity = nodeAffinity(r) }),
		mut("claim ref", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Spec.ClaimRef = &corev1.ObjectReference{Name: "data", Namespace: testNamespace, UID: "0f0e0d0c-0b0a-4908-8706-050403020100"}
		}),
	},
	status: []mutation{
		mut("phase", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Status.Phase = corev1.PersistentVolumePhase(pick(r, "Bound", "Released", "Bogus", ""))
		}),
		mut("message", func(r *rand.Rand, o *corev1.PersistentVolume) {
			o.Status.Message = "m"
			o.Status.Reason = pick(r, "R", "")
		}),
	},
}

func nodeAffinity(r *rand.Rand) *corev1.VolumeNodeAffinity {
	if r.IntN(4) == 0 {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: pick(r, "kubernetes.io/hostname", "bad key"),
			Operator: corev1.NodeSelectorOperator(pick(r, "In", "Exists", "Near")), Values: []string{pick(r, "node-1", "")}}}}}}}
}

var podKind = &kind{name: "Pod", gvr: coreV1.WithResource("pods"), kind: "Pod", namespaced: true,
	empty: func() runtime.Object { return &corev1.Pod{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
			Spec: corev1.PodSpec{
				// No scheduler acts on it, no ServiceAccount token is
				// mounted into it: nothing changes it after its creation.
				SchedulerName:                "csisim-none",
				ServiceAccountName:           "default",
				AutomountServiceAccountToken: ptr(false),
				Containers: []corev1.Container{{Name: "app", Image: pick(r, "busybox:1.36", "registry.example.com/app@sha256:"+sha),
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	},
	create: []mutation{
		mut("no containers", func(r *rand.Rand, o *corev1.Pod) { o.Spec.Containers = nil }),
		mut("container name", func(r *rand.Rand, o *corev1.Pod) {
			c := o.Spec.Containers[0]
			c.Name = pick(r, "app", "Bad_Name", "")
			o.Spec.Containers = append(o.Spec.Containers, c)
		}),
		mut("image", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].Image = pick(r, "", " busybox", "busybox:latest")
		}),
		mut("mount of no volume", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].VolumeMounts = append(o.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: pick(r, "missing", "Data"), MountPath: "/m"})
		}),
		mut("mount path", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].VolumeMounts[0].MountPath = pick(r, "", "relative", "/a/../b", "/data")
			if r.IntN(2) == 0 {
				o.Spec.Containers[0].VolumeMounts = append(o.Spec.Containers[0].VolumeMounts, o.Spec.Containers[0].VolumeMounts[0])
			}
		}),
		mut("mount propagation", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].VolumeMounts[0].MountPropagation = ptr(corev1.MountPropagationMode(pick(r, "Bidirectional", "HostToContainer", "Sideways")))
		}),
		mut("volume", func(r *rand.Rand, o *corev1.Pod) {
			v := &o.Spec.Volumes[0]
			switch r.IntN(6) {
			case 0:
				v.Name = pick(r, "Data", "")
			case 1:
				v.PersistentVolumeClaim.ClaimName = ""
			case 2:
				v.VolumeSource = corev1.VolumeSource{}
			case 3:
				v.EmptyDir = &corev1.EmptyDirVolumeSource{}
			case 4:
				v.VolumeSource = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: pick(r, "hostpath.csisim.io", "", "Bad Driver")}}
			default:
				o.Spec.Volumes = append(o.Spec.Volumes, *v)
			}
		}),
		mut("ephemeral volume", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: someAccessModes(r), Resources: corev1.VolumeResourceRequirements{Requests: storage(pick(r, "1Gi", "0"))}}}}}
		}),
		mut("host path volume", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: pick(r, "/var/x", "rel"),
				Type: ptr(corev1.HostPathType(pick(r, "", "Socket", "Bogus")))}}
		}),
		mut("restart policy", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.RestartPolicy = corev1.RestartPolicy(pick(r, "Never", "Sometimes"))
		}),
		mut("node name", func(r *rand.Rand, o *corev1.Pod) { o.Spec.NodeName = pick(r, "node-1", "Bad_Node") }),
		mut("toleration", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Tolerations = []corev1.Toleration{{Key: pick(r, "example.com/t", "", "bad key"), Operator: corev1.TolerationOperator(pick(r, "Exists", "Equal", "Like")),
				Value: pick(r, "", "v"), Effect: corev1.TaintEffect(pick(r, "NoExecute", "", "Bogus")), TolerationSeconds: ptr(int64(pick(r, 10, -1)))}}
		}),
		mut("resources", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pick(r, "2", "100m", "-1"))},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pick(r, "1", "4"))}}
		}),
		mut("port", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: pick(r, "http", "Bad_Port", "very-long-port-name"), ContainerPort: int32(pick(r, 80, 0, 70000)),
				Protocol: corev1.Protocol(pick(r, "TCP", "ICMP", ""))}}
		}),
		mut("env", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers[0].Env = []corev1.EnvVar{{Name: pick(r, "OK", "1BAD", "with space", ""), Value: "v"}}
		}),
		mut("deadline", func(r *rand.Rand, o *corev1.Pod) { o.Spec.ActiveDeadlineSeconds = ptr(int64(pick(r, 0, -5, 60))) }),
		mut("priority", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.PriorityClassName = pick(r, "system-node-critical", "no-such-class")
		}),
		mut("security context", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(pick(r, 1000, -1))), FSGroup: ptr(int64(pick(r, 2000, -2))),
				FSGroupChangePolicy: ptr(corev1.PodFSGroupChangePolicy(pick(r, "OnRootMismatch", "Sometimes")))}
		}),
	},
	update: []mutation{
		mut("image", func(r *rand.Rand, o *corev1.Pod) { o.Spec.Containers[0].Image = pick(r, "busybox:1.37", "") }),
		mut("add container", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Containers = append(o.Spec.Containers, corev1.Container{Name: "extra", Image: "busybox:1"})
		}),
		mut("volume", func(r *rand.Rand, o *corev1.Pod) { o.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "other" }),
		mut("deadline", func(r *rand.Rand, o *corev1.Pod) { o.Spec.ActiveDeadlineSeconds = ptr(int64(pick(r, 30, 0))) }),
		mut("toleration", func(r *rand.Rand, o *corev1.Pod) {
			o.Spec.Tolerations = append(o.Spec.Tolerations, corev1.Toleration{Key: "example.com/t", Operator: corev1.TolerationOpExists})
		}),
		mut("node name", func(r *rand.Rand, o *corev1.Pod) { o.Spec.NodeName = "node-2" }),
	},
	status: []mutation{
		mut("phase", func(r *rand.Rand, o *corev1.Pod) { o.Status.Phase = corev1.PodPhase(pick(r, "Running", "Bogus")) }),
		mut("pod IP", func(r *rand.Rand, o *corev1.Pod) {
			o.Status.PodIP = pick(r, "10.0.0.5", "not-an-ip")
			o.Status.PodIPs = []corev1.PodIP{{IP: o.Status.PodIP}}
		}),
		mut("condition", func(r *rand.Rand, o *corev1.Pod) {
			o.Status.Conditions = append(o.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(pick(r, "Ready", "example.com/gate", "bad type")),
				Status: corev1.ConditionStatus(pick(r, "True", "Maybe"))})
		}),
		mut("container status", func(r *rand.Rand, o *corev1.Pod) {
			o.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pick(r, "app", "other"), Image: "busybox:1.36", ImageID: "x",
				RestartCount: int32(pick(r, 0, -1)), Ready: true}}
		}),
		mut("qos class", func(r *rand.Rand, o *corev1.Pod) {
			o.Status.QOSClass = corev1.PodQOSClass(pick(r, "Guaranteed", "Burstable"))
		}),
		mut("nominated node", func(r *rand.Rand, o *corev1.Pod) { o.Status.NominatedNodeName = pick(r, "node-1", "Bad_Node") }),
	},
}

// sha is a well-formed image digest.
const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
