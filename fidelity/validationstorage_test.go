package fidelity

import (
	"math/rand/v2"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The storage group's kinds for TestValidationAgainstTheRealServer.

var storageV1 = storagev1.SchemeGroupVersion

// driverName is a CSI driver's name made from a case's name: a DNS
// subdomain of at most 63 characters.
func driverName(name string) string { return strings.ReplaceAll(name, "-", ".") + ".csi.example.com" }

var storageKinds = []*kind{
	{name: "StorageClass", gvr: storageV1.WithResource("storageclasses"), kind: "StorageClass",
		empty: func() runtime.Object { return &storagev1.StorageClass{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: pick(r, "hostpath.csisim.io", "example.com/nfs"),
				Parameters: map[string]string{"type": pick(r, "ssd", "hdd")}}
		},
		create: []mutation{
			mut("provisioner", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.Provisioner = pick(r, "", "Bad Provisioner", "kubernetes.io/no-provisioner", strings.Repeat("p", 64))
			}),
			mut("reclaim policy", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimPolicy(pick(r, "Retain", "Recycle", "Bogus")))
			}),
			mut("binding mode", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.VolumeBindingMode = ptr(storagev1.VolumeBindingMode(pick(r, "WaitForFirstConsumer", "Later")))
			}),
			mut("parameter", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.Parameters[pick(r, "bad key", "csi.storage.k8s.io/fstype", "")] = "x"
			}),
			mut("topology", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{
					Key: pick(r, "topology.kubernetes.io/zone", "bad key"), Values: []string{pick(r, "a", "")}}}}}
			}),
			mut("mount options", func(r *rand.Rand, o *storagev1.StorageClass) { o.MountOptions = []string{pick(r, "ro", "")} }),
		},
		update: []mutation{
			mut("provisioner", func(r *rand.Rand, o *storagev1.StorageClass) { o.Provisioner = "other.example.com" }),
			mut("parameters", func(r *rand.Rand, o *storagev1.StorageClass) { o.Parameters["type"] = "nvme" }),
			mut("reclaim policy", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimRetain)
			}),
			mut("binding mode", func(r *rand.Rand, o *storagev1.StorageClass) {
				o.VolumeBindingMode = ptr(storagev1.VolumeBindingWaitForFirstConsumer)
			}),
			mut("expansion", func(r *rand.Rand, o *storagev1.StorageClass) { o.AllowVolumeExpansion = ptr(true) }),
			mut("mount options", func(r *rand.Rand, o *storagev1.StorageClass) { o.MountOptions = []string{"ro"} }),
		},
	},
	{name: "CSIDriver", gvr: storageV1.WithResource("csidrivers"), kind: "CSIDriver",
		empty: func() runtime.Object { return &storagev1.CSIDriver{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driverName(name)},
				Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(r.IntN(2) == 0), PodInfoOnMount: ptr(r.IntN(2) == 0)}}
		},
		create: []mutation{
			mut("long name", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Name = strings.Repeat("d", 64) + ".example.com" }),
			mut("fsGroupPolicy", func(r *rand.Rand, o *storagev1.CSIDriver) {
				o.Spec.FSGroupPolicy = ptr(storagev1.FSGroupPolicy(pick(r, "File", "None", "Sometimes")))
			}),
			mut("lifecycle modes", func(r *rand.Rand, o *storagev1.CSIDriver) {
				o.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleMode(pick(r, "Persistent", "Ephemeral", "Forever"))}
			}),
			mut("token requests", func(r *rand.Rand, o *storagev1.CSIDriver) {
				t := storagev1.TokenRequest{Audience: pick(r, "", "vault"), ExpirationSeconds: ptr(int64(pick(r, 3600, 60)))}
				o.Spec.TokenRequests = []storagev1.TokenRequest{t, t}
			}),
			mut("update period", func(r *rand.Rand, o *storagev1.CSIDriver) {
				o.Spec.NodeAllocatableUpdatePeriodSeconds = ptr(int64(pick(r, 5, 60)))
			}),
		},
		update: []mutation{
			mut("attachRequired", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.AttachRequired = ptr(!*o.Spec.AttachRequired) }),
			mut("podInfoOnMount", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.PodInfoOnMount = ptr(!*o.Spec.PodInfoOnMount) }),
			mut("lifecycle modes", func(r *rand.Rand, o *storagev1.CSIDriver) {
				o.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
			}),
			mut("storageCapacity", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.StorageCapacity = ptr(true) }),
			mut("fsGroupPolicy", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.FSGroupPolicy = ptr(storagev1.FileFSGroupPolicy) }),
			mut("requiresRepublish", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.RequiresRepublish = ptr(true) }),
			mut("seLinuxMount", func(r *rand.Rand, o *storagev1.CSIDriver) { o.Spec.SELinuxMount = ptr(true) }),
		},
	},
	{name: "CSINode", gvr: storageV1.WithResource("csinodes"), kind: "CSINode",
		empty: func() runtime.Object { return &storagev1.CSINode{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "hostpath.csisim.io", NodeID: name,
					TopologyKeys: []string{"topology.hostpath.csisim.io/node"}}}}}
		},
		create: []mutation{
			mut("driver", func(r *rand.Rand, o *storagev1.CSINode) {
				d := &o.Spec.Drivers[0]
				d.Name = pick(r, d.Name, "", "Bad Driver")
				d.NodeID = pick(r, d.NodeID, "", strings.Repeat("n", 257))
				d.TopologyKeys = append(d.TopologyKeys, pick(r, "bad key", "topology.hostpath.csisim.io/node"))
			}),
			mut("duplicate driver", func(r *rand.Rand, o *storagev1.CSINode) { o.Spec.Drivers = append(o.Spec.Drivers, o.Spec.Drivers[0]) }),
			mut("allocatable", func(r *rand.Rand, o *storagev1.CSINode) {
				o.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr(int32(pick(r, 10, -1)))}
			}),
		},
		update: []mutation{
			mut("node ID", func(r *rand.Rand, o *storagev1.CSINode) { o.Spec.Drivers[0].NodeID = "changed" }),
			mut("topology keys", func(r *rand.Rand, o *storagev1.CSINode) { o.Spec.Drivers[0].TopologyKeys = nil }),
			mut("allocatable", func(r *rand.Rand, o *storagev1.CSINode) {
				o.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr(int32(pick(r, 5, -1)))}
			}),
			mut("add driver", func(r *rand.Rand, o *storagev1.CSINode) {
				o.Spec.Drivers = append(o.Spec.Drivers, storagev1.CSINodeDriver{Name: "other.example.com", NodeID: "n"})
			}),
		},
	},
	{name: "VolumeAttachment", gvr: storageV1.WithResource("volumeattachments"), kind: "VolumeAttachment",
		empty: func() runtime.Object { return &storagev1.VolumeAttachment{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csisim.io", NodeName: pick(r, "node-1", "node-2"),
					Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv-" + name)}}}
		},
		create: []mutation{
			mut("attacher", func(r *rand.Rand, o *storagev1.VolumeAttachment) {
				o.Spec.Attacher = pick(r, "", "Bad Attacher", "kubernetes.io/gce-pd")
			}),
			mut("node name", func(r *rand.Rand, o *storagev1.VolumeAttachment) { o.Spec.NodeName = pick(r, "", "Bad_Node") }),
			mut("source", func(r *rand.Rand, o *storagev1.VolumeAttachment) {
				switch r.IntN(3) {
				case 0:
					o.Spec.Source = storagev1.VolumeAttachmentSource{}
				case 1:
					o.Spec.Source.PersistentVolumeName = ptr(pick(r, "", "Bad_PV"))
				default:
					o.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
				}
			}),
			mut("status", func(r *rand.Rand, o *storagev1.VolumeAttachment) { o.Status.Attached = true }),
		},
		update: []mutation{
			mut("node name", func(r *rand.Rand, o *storagev1.VolumeAttachment) { o.Spec.NodeName = "node-3" }),
			mut("attacher", func(r *rand.Rand, o *storagev1.VolumeAttachment) { o.Spec.Attacher = "other.example.com" }),
			mut("source", func(r *rand.Rand, o *storagev1.VolumeAttachment) { o.Spec.Source.PersistentVolumeName = ptr("other") }),
		},
		status: []mutation{
			mut("attached", func(r *rand.Rand, o *storagev1.VolumeAttachment) {
				o.Status.Attached = true
				o.Status.AttachmentMetadata = map[string]string{pick(r, "devicePath", "bad key", ""): "/dev/x"}
			}),
			mut("attach error", func(r *rand.Rand, o *storagev1.VolumeAttachment) {
				o.Status.AttachError = &storagev1.VolumeError{Message: pick(r, "failed", strings.Repeat("e", 1025)), ErrorCode: ptr(int32(pick(r, 5, -1)))}
			}),
			mut("detach error", func(r *rand.Rand, o *storagev1.VolumeAttachment) {
				o.Status.DetachError = &storagev1.VolumeError{Message: "failed", Time: testTime}
			}),
		},
	},
	{name: "CSIStorageCapacity", gvr: storageV1.WithResource("csistoragecapacities"), kind: "CSIStorageCapacity", namespaced: true,
		empty: func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				StorageClassName: "csisim-sc", Capacity: ptr(resource.MustParse(pick(r, "10Gi", "1Ti"))),
				NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.hostpath.csisim.io/node": "node-1"}}}
		},
		create: []mutation{
			mut("class name", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) { o.StorageClassName = pick(r, "", "Bad_Class") }),
			mut("capacity", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) {
				o.Capacity = ptr(resource.MustParse(pick(r, "-1", "0")))
				o.MaximumVolumeSize = ptr(resource.MustParse(pick(r, "1Gi", "-1Gi")))
			}),
			mut("topology", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) {
				o.NodeTopology = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: pick(r, "zone", "bad key"),
					Operator: metav1.LabelSelectorOperator(pick(r, "In", "Exists", "Near")), Values: []string{"a"}}}}
			}),
		},
		update: []mutation{
			mut("class name", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) { o.StorageClassName = "other" }),
			mut("topology", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) { o.NodeTopology = nil }),
			mut("capacity", func(r *rand.Rand, o *storagev1.CSIStorageCapacity) {
				o.Capacity = ptr(resource.MustParse(pick(r, "1Gi", "-1")))
			}),
		},
	},
	{name: "VolumeAttributesClass", gvr: storageV1.WithResource("volumeattributesclasses"), kind: "VolumeAttributesClass",
		empty: func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: "hostpath.csisim.io",
				Parameters: map[string]string{"iops": pick(r, "100", "3000")}}
		},
		create: []mutation{
			mut("driver name", func(r *rand.Rand, o *storagev1.VolumeAttributesClass) { o.DriverName = pick(r, "", "Bad Driver") }),
			mut("parameters", func(r *rand.Rand, o *storagev1.VolumeAttributesClass) {
				if r.IntN(2) == 0 {
					o.Parameters = nil
				} else {
					o.Parameters[pick(r, "bad key", "")] = "x"
				}
			}),
		},
		update: []mutation{
			mut("driver name", func(r *rand.Rand, o *storagev1.VolumeAttributesClass) { o.DriverName = "other.example.com" }),
			mut("parameters", func(r *rand.Rand, o *storagev1.VolumeAttributesClass) { o.Parameters["iops"] = "5" }),
		},
	},
}
