package fakekube

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resource describes one kind the server serves: where it lives in the URL
// space, how it is listed, and which of the real server's behaviours apply.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	namespaced bool
	shortNames []string
	categories []string
	// hasStatus: the kind has a status subresource, so a main-resource
	// update keeps the stored status and a status update keeps everything else.
	hasStatus bool
	// subresources other than status that the server answers.
	subresources []string
	// fields adds the kind's own field-selector labels to metadata.name/namespace.
	fields func(obj runtime.Object) fields.Set
	// crd: served as a CustomResourceDefinition is on a real cluster, so
	// JSON only (no protobuf).
	crd bool
	// expires: objects go the server's EventTTL after their last write, as
	// Events do on a real server.
	expires bool
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

func (r *resource) listGVK() schema.GroupVersionKind {
	return r.gvr.GroupVersion().WithKind(r.kind + "List")
}

func (r *resource) groupResource() schema.GroupResource { return r.gvr.GroupResource() }

// registry is the set of resources a server serves, indexed for URL lookup.
type registry struct {
	byGVR  map[schema.GroupVersionResource]*resource
	byKind map[schema.GroupVersionKind]*resource
	all    []*resource // in a stable order, for discovery
}

func newRegistry(resources []*resource) *registry {
	reg := &registry{
		byGVR:  map[schema.GroupVersionResource]*resource{},
		byKind: map[schema.GroupVersionKind]*resource{},
	}
	for _, r := range resources {
		reg.byGVR[r.gvr] = r
		reg.byKind[r.gvk()] = r
		reg.all = append(reg.all, r)
	}
	sort.SliceStable(reg.all, func(i, j int) bool {
		a, b := reg.all[i].gvr, reg.all[j].gvr
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Resource < b.Resource
	})
	return reg
}

func (reg *registry) lookup(gvr schema.GroupVersionResource) (*resource, error) {
	r, ok := reg.byGVR[gvr]
	if !ok {
		return nil, fmt.Errorf("the server could not find the requested resource (%s)", gvr.String())
	}
	return r, nil
}

// groupVersions lists the group versions served, core ("" group) first.
func (reg *registry) groupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, r := range reg.all {
		gv := r.gvr.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

var (
	coreV1      = corev1.SchemeGroupVersion
	storageV1   = storagev1.SchemeGroupVersion
	appsV1      = appsv1.SchemeGroupVersion
	coordV1     = coordinationv1.SchemeGroupVersion
	eventsV1    = eventsv1.SchemeGroupVersion
	snapshotV1  = snapshotv1.SchemeGroupVersion
	groupSnapV1 = groupsnapshotv1.SchemeGroupVersion
	allCategory = []string{"all"}
)

// defaultResources is what the server serves: the kinds the volume lifecycle
// touches, with the short names, subresources and field selectors of the real
// API server.
func defaultResources() []*resource {
	return []*resource{
		{gvr: coreV1.WithResource("namespaces"), kind: "Namespace", shortNames: []string{"ns"}, hasStatus: true,
			fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
			}},
		{gvr: coreV1.WithResource("nodes"), kind: "Node", shortNames: []string{"no"}, hasStatus: true, subresources: []string{"proxy"},
			fields: func(o runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": fmt.Sprint(o.(*corev1.Node).Spec.Unschedulable)}
			}},
		{gvr: coreV1.WithResource("pods"), kind: "Pod", namespaced: true, shortNames: []string{"po"}, categories: allCategory,
			hasStatus: true, subresources: []string{"binding", "log"}, fields: podFields},
		{gvr: coreV1.WithResource("persistentvolumes"), kind: "PersistentVolume", shortNames: []string{"pv"}, hasStatus: true},
		{gvr: coreV1.WithResource("persistentvolumeclaims"), kind: "PersistentVolumeClaim", namespaced: true,
			shortNames: []string{"pvc"}, hasStatus: true},
		{gvr: coreV1.WithResource("events"), kind: "Event", namespaced: true, shortNames: []string{"ev"}, fields: coreEventFields,
			expires: true},
		{gvr: coreV1.WithResource("secrets"), kind: "Secret", namespaced: true,
			fields: func(o runtime.Object) fields.Set {
				return fields.Set{"type": string(o.(*corev1.Secret).Type)}
			}},
		{gvr: coreV1.WithResource("configmaps"), kind: "ConfigMap", namespaced: true, shortNames: []string{"cm"}},
		{gvr: coreV1.WithResource("serviceaccounts"), kind: "ServiceAccount", namespaced: true, shortNames: []string{"sa"},
			subresources: []string{"token"}},
		{gvr: storageV1.WithResource("storageclasses"), kind: "StorageClass", shortNames: []string{"sc"}},
		{gvr: storageV1.WithResource("csidrivers"), kind: "CSIDriver"},
		{gvr: schedulingV1.WithResource("priorityclasses"), kind: "PriorityClass", shortNames: []string{"pc"}},
		{gvr: storageV1.WithResource("csinodes"), kind: "CSINode"},
		{gvr: storageV1.WithResource("volumeattachments"), kind: "VolumeAttachment", hasStatus: true},
		{gvr: storageV1.WithResource("csistoragecapacities"), kind: "CSIStorageCapacity", namespaced: true},
		{gvr: storageV1.WithResource("volumeattributesclasses"), kind: "VolumeAttributesClass", shortNames: []string{"vac"}},
		{gvr: appsV1.WithResource("statefulsets"), kind: "StatefulSet", namespaced: true, shortNames: []string{"sts"},
			categories: allCategory, hasStatus: true},
		{gvr: appsV1.WithResource("deployments"), kind: "Deployment", namespaced: true, shortNames: []string{"deploy"},
			categories: allCategory, hasStatus: true},
		{gvr: appsV1.WithResource("replicasets"), kind: "ReplicaSet", namespaced: true, shortNames: []string{"rs"},
			categories: allCategory, hasStatus: true},
		{gvr: appsV1.WithResource("daemonsets"), kind: "DaemonSet", namespaced: true, shortNames: []string{"ds"},
			categories: allCategory, hasStatus: true},
		{gvr: appsV1.WithResource("controllerrevisions"), kind: "ControllerRevision", namespaced: true},
		{gvr: coordV1.WithResource("leases"), kind: "Lease", namespaced: true},
		{gvr: eventsV1.WithResource("events"), kind: "Event", namespaced: true, shortNames: []string{"ev"}, fields: eventsV1Fields,
			expires: true},
		// The snapshot CRDs of kubernetes-csi/external-snapshotter.
		{gvr: snapshotV1.WithResource("volumesnapshots"), kind: "VolumeSnapshot", namespaced: true,
			shortNames: []string{"vs"}, hasStatus: true, crd: true},
		{gvr: snapshotV1.WithResource("volumesnapshotcontents"), kind: "VolumeSnapshotContent",
			shortNames: []string{"vsc", "vscs"}, hasStatus: true, crd: true},
		{gvr: snapshotV1.WithResource("volumesnapshotclasses"), kind: "VolumeSnapshotClass",
			shortNames: []string{"vsclass", "vsclasses"}, crd: true},
		// The group snapshot CRDs of the same release, at v1: the
		// version its snapshot-controller and csi-snapshotter use. The
		// real CRDs also serve the deprecated v1beta1 and v1beta2 (the
		// storage version), which csisim does not.
		{gvr: groupSnapV1.WithResource("volumegroupsnapshots"), kind: "VolumeGroupSnapshot", namespaced: true,
			shortNames: []string{"vgs"}, hasStatus: true, crd: true},
		{gvr: groupSnapV1.WithResource("volumegroupsnapshotcontents"), kind: "VolumeGroupSnapshotContent",
			shortNames: []string{"vgsc", "vgscs"}, hasStatus: true, crd: true},
		{gvr: groupSnapV1.WithResource("volumegroupsnapshotclasses"), kind: "VolumeGroupSnapshotClass",
			shortNames: []string{"vgsclass", "vgsclasses"}, crd: true},
	}
}

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func coreEventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func eventsV1Fields(o runtime.Object) fields.Set {
	e := o.(*eventsv1.Event)
	return fields.Set{
		"regarding.kind":      e.Regarding.Kind,
		"regarding.namespace": e.Regarding.Namespace,
		"regarding.name":      e.Regarding.Name,
		"regarding.uid":       string(e.Regarding.UID),
		"reason":              e.Reason,
		"type":                e.Type,
	}
}

// singularName is the lower-case kind, as the real server reports it.
func (r *resource) singularName() string {
	if r.singular != "" {
		return r.singular
	}
	return strings.ToLower(r.kind)
}
