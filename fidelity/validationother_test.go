package fidelity

import (
	"math/rand/v2"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

// The apps, coordination, scheduling, events and snapshot kinds for
// TestValidationAgainstTheRealServer.

var appsV1 = appsv1.SchemeGroupVersion

// template is a workload's valid pod template.
func template(r *rand.Rand) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{SchedulerName: "csisim-none", Containers: []corev1.Container{{Name: "db", Image: pick(r, "postgres:16", "busybox:1.36")}}}}
}

// workloadMutations break what every workload kind has: a selector that
// matches its template, replicas, the template's pod spec.
func workloadMutations[T runtime.Object](spec func(T) (*int32, **metav1.LabelSelector, *corev1.PodTemplateSpec)) []mutation {
	return []mutation{
		mut("replicas", func(r *rand.Rand, o T) { rep, _, _ := spec(o); *rep = int32(pick(r, 0, 3, -1)) }),
		mut("selector", func(r *rand.Rand, o T) {
			_, sel, _ := spec(o)
			switch r.IntN(3) {
			case 0:
				*sel = nil
			case 1:
				*sel = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
			default:
				*sel = &metav1.LabelSelector{}
			}
		}),
		mut("template", func(r *rand.Rand, o T) {
			_, _, t := spec(o)
			switch r.IntN(3) {
			case 0:
				t.Spec.Containers = nil
			case 1:
				t.Spec.RestartPolicy = corev1.RestartPolicy(pick(r, "Never", "OnFailure"))
			default:
				t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/m"}}
			}
		}),
	}
}

var otherKinds = []*kind{
	{name: "StatefulSet", gvr: appsV1.WithResource("statefulsets"), kind: "StatefulSet", namespaced: true,
		empty: func() runtime.Object { return &appsv1.StatefulSet{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}}}
			return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(pick(r, 1, 2))), ServiceName: "db",
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template(r),
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}}}
		},
		create: append(workloadMutations(func(o *appsv1.StatefulSet) (*int32, **metav1.LabelSelector, *corev1.PodTemplateSpec) {
			return o.Spec.Replicas, &o.Spec.Selector, &o.Spec.Template
		}),
			mut("claim template", func(r *rand.Rand, o *appsv1.StatefulSet) {
				t := &o.Spec.VolumeClaimTemplates[0]
				t.Name = pick(r, "data", "Bad_Name", "")
				t.Spec.AccessModes = someAccessModes(r)
			}),
			mut("pod management", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.PodManagementPolicy = appsv1.PodManagementPolicyType(pick(r, "Parallel", "Whenever"))
			}),
			mut("update strategy", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.StatefulSetUpdateStrategyType(pick(r, "OnDelete", "RollingUpdate", "Sometimes")),
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(pick(r, 0, -1)))}}
			}),
			mut("retention", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.PersistentVolumeClaimRetentionPolicyType(pick(r, "Delete", "Retain", "Keep"))}
			}),
			mut("ordinals", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: int32(pick(r, 5, -1))}
			}),
			mut("min ready", func(r *rand.Rand, o *appsv1.StatefulSet) { o.Spec.MinReadySeconds = int32(pick(r, 10, -1)) }),
		),
		update: []mutation{
			mut("replicas", func(r *rand.Rand, o *appsv1.StatefulSet) { o.Spec.Replicas = ptr(int32(pick(r, 5, -1))) }),
			mut("selector", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db", "tier": "x"}}
				o.Spec.Template.Labels["tier"] = "x"
			}),
			mut("service name", func(r *rand.Rand, o *appsv1.StatefulSet) { o.Spec.ServiceName = "other" }),
			mut("claim templates", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = storage("2Gi")
			}),
			mut("image", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Spec.Template.Spec.Containers[0].Image = pick(r, "busybox:1.37", "")
			}),
		},
		status: []mutation{
			mut("replicas", func(r *rand.Rand, o *appsv1.StatefulSet) {
				o.Status.Replicas = int32(pick(r, 1, -1))
				o.Status.ReadyReplicas = int32(pick(r, 0, 2))
			}),
			mut("observed generation", func(r *rand.Rand, o *appsv1.StatefulSet) { o.Status.ObservedGeneration = int64(pick(r, 1, -1)) }),
		},
	},
	{name: "Deployment", gvr: appsV1.WithResource("deployments"), kind: "Deployment", namespaced: true,
		empty: func() runtime.Object { return &appsv1.Deployment{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(pick(r, 1, 2))),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template(r)}}
		},
		create: append(workloadMutations(func(o *appsv1.Deployment) (*int32, **metav1.LabelSelector, *corev1.PodTemplateSpec) {
			return o.Spec.Replicas, &o.Spec.Selector, &o.Spec.Template
		}),
			mut("strategy", func(r *rand.Rand, o *appsv1.Deployment) {
				o.Spec.Strategy.Type = appsv1.DeploymentStrategyType(pick(r, "Recreate", "RollingUpdate", "Bogus"))
				if r.IntN(2) == 0 {
					o.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr(intstr.FromInt32(int32(pick(r, 0, 1)))),
						MaxUnavailable: ptr(intstr.FromString(pick(r, "0%", "25%", "150%")))}
				}
			}),
			mut("deadline", func(r *rand.Rand, o *appsv1.Deployment) {
				o.Spec.ProgressDeadlineSeconds = ptr(int32(pick(r, 5, 600)))
				o.Spec.MinReadySeconds = int32(pick(r, 10, -1))
			}),
			mut("history", func(r *rand.Rand, o *appsv1.Deployment) { o.Spec.RevisionHistoryLimit = ptr(int32(pick(r, 0, -1))) }),
		),
		update: []mutation{
			mut("selector", func(r *rand.Rand, o *appsv1.Deployment) {
				o.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db", "tier": "x"}}
				o.Spec.Template.Labels["tier"] = "x"
			}),
			mut("replicas", func(r *rand.Rand, o *appsv1.Deployment) { o.Spec.Replicas = ptr(int32(pick(r, 4, -1))) }),
			mut("paused", func(r *rand.Rand, o *appsv1.Deployment) { o.Spec.Paused = true }),
		},
		status: []mutation{
			mut("replicas", func(r *rand.Rand, o *appsv1.Deployment) {
				o.Status.Replicas = int32(pick(r, 1, -1))
				o.Status.AvailableReplicas = int32(pick(r, 0, 3))
			}),
			mut("collision count", func(r *rand.Rand, o *appsv1.Deployment) { o.Status.CollisionCount = ptr(int32(pick(r, 1, -1))) }),
		},
	},
	{name: "ReplicaSet", gvr: appsV1.WithResource("replicasets"), kind: "ReplicaSet", namespaced: true,
		empty: func() runtime.Object { return &appsv1.ReplicaSet{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(pick(r, 1, 2))),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template(r)}}
		},
		create: workloadMutations(func(o *appsv1.ReplicaSet) (*int32, **metav1.LabelSelector, *corev1.PodTemplateSpec) {
			return o.Spec.Replicas, &o.Spec.Selector, &o.Spec.Template
		}),
		update: []mutation{
			mut("selector", func(r *rand.Rand, o *appsv1.ReplicaSet) {
				o.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db", "tier": "x"}}
				o.Spec.Template.Labels["tier"] = "x"
			}),
			mut("replicas", func(r *rand.Rand, o *appsv1.ReplicaSet) { o.Spec.Replicas = ptr(int32(pick(r, 3, -1))) }),
		},
		status: []mutation{
			mut("replicas", func(r *rand.Rand, o *appsv1.ReplicaSet) {
				o.Status.Replicas = int32(pick(r, 1, -1))
				o.Status.FullyLabeledReplicas = int32(pick(r, 0, 2))
			}),
		},
	},
	{name: "ControllerRevision", gvr: appsV1.WithResource("controllerrevisions"), kind: "ControllerRevision", namespaced: true,
		empty: func() runtime.Object { return &appsv1.ControllerRevision{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Revision: int64(pick(r, 1, 7)), Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
		},
		create: []mutation{
			mut("revision", func(r *rand.Rand, o *appsv1.ControllerRevision) { o.Revision = int64(pick(r, 0, -1)) }),
			mut("data", func(r *rand.Rand, o *appsv1.ControllerRevision) { o.Data = runtime.RawExtension{} }),
		},
		update: []mutation{
			mut("data", func(r *rand.Rand, o *appsv1.ControllerRevision) {
				o.Data = runtime.RawExtension{Raw: []byte(`{"spec":{"x":1}}`)}
			}),
			mut("revision", func(r *rand.Rand, o *appsv1.ControllerRevision) { o.Revision = int64(pick(r, 9, -1)) }),
		},
	},
	{name: "Lease", gvr: coordinationv1.SchemeGroupVersion.WithResource("leases"), kind: "Lease", namespaced: true,
		empty: func() runtime.Object { return &coordinationv1.Lease{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40)), RenewTime: ptr(metav1.NewMicroTime(testTime.Time))}}
		},
		create: []mutation{
			mut("duration", func(r *rand.Rand, o *coordinationv1.Lease) { o.Spec.LeaseDurationSeconds = ptr(int32(pick(r, 0, -1))) }),
			mut("transitions", func(r *rand.Rand, o *coordinationv1.Lease) { o.Spec.LeaseTransitions = ptr(int32(pick(r, 2, -1))) }),
			mut("strategy", func(r *rand.Rand, o *coordinationv1.Lease) {
				o.Spec.Strategy = ptr(coordinationv1.CoordinatedLeaseStrategy(pick(r, "OldestEmulationVersion", "Bogus")))
			}),
		},
		update: []mutation{
			mut("holder", func(r *rand.Rand, o *coordinationv1.Lease) { o.Spec.HolderIdentity = ptr(pick(r, "node-2", "")) }),
			mut("duration", func(r *rand.Rand, o *coordinationv1.Lease) { o.Spec.LeaseDurationSeconds = ptr(int32(pick(r, 10, -1))) }),
		},
	},
	{name: "PriorityClass", gvr: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), kind: "PriorityClass",
		empty: func() runtime.Object { return &schedulingv1.PriorityClass{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(pick(r, 1000, -5, 1000000000))}
		},
		create: []mutation{
			mut("value", func(r *rand.Rand, o *schedulingv1.PriorityClass) { o.Value = int32(pick(r, 1000000001, 2000000000)) }),
			mut("system name", func(r *rand.Rand, o *schedulingv1.PriorityClass) {
				o.Name = pick(r, "system-custom", "system-node-critical")
			}),
			mut("preemption", func(r *rand.Rand, o *schedulingv1.PriorityClass) {
				o.PreemptionPolicy = ptr(corev1.PreemptionPolicy(pick(r, "Never", "Sometimes")))
			}),
		},
		update: []mutation{
			mut("value", func(r *rand.Rand, o *schedulingv1.PriorityClass) { o.Value++ }),
			mut("description", func(r *rand.Rand, o *schedulingv1.PriorityClass) { o.Description = "changed" }),
			mut("preemption", func(r *rand.Rand, o *schedulingv1.PriorityClass) { o.PreemptionPolicy = ptr(corev1.PreemptNever) }),
		},
	},
	{name: "Event (events.k8s.io)", gvr: eventsv1.SchemeGroupVersion.WithResource("events"), kind: "Event", namespaced: true,
		empty: func() runtime.Object { return &eventsv1.Event{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				EventTime: metav1.NewMicroTime(testTime.Time), ReportingController: "example.com/ctl", ReportingInstance: "ctl-1",
				Action: "Sync", Reason: "Synced", Type: pick(r, "Normal", "Warning"), Note: "synced",
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: testNamespace, Name: "app"}}
		},
		create: []mutation{
			mut("event time", func(r *rand.Rand, o *eventsv1.Event) { o.EventTime = metav1.MicroTime{} }),
			mut("reporting controller", func(r *rand.Rand, o *eventsv1.Event) { o.ReportingController = pick(r, "", "bad controller") }),
			mut("reporting instance", func(r *rand.Rand, o *eventsv1.Event) { o.ReportingInstance = pick(r, "", strings.Repeat("i", 129)) }),
			mut("action", func(r *rand.Rand, o *eventsv1.Event) { o.Action = pick(r, "", strings.Repeat("a", 129)) }),
			mut("type", func(r *rand.Rand, o *eventsv1.Event) { o.Type = pick(r, "", "Bogus") }),
			mut("note", func(r *rand.Rand, o *eventsv1.Event) { o.Note = strings.Repeat("n", pick(r, 1024, 1025)) }),
			mut("dotted name", func(r *rand.Rand, o *eventsv1.Event) { o.Name = pick(r, ".18a4e", "app.18a4e5c") }),
			mut("series", func(r *rand.Rand, o *eventsv1.Event) {
				o.Series = &eventsv1.EventSeries{Count: int32(pick(r, 2, 1)), LastObservedTime: metav1.NewMicroTime(testTime.Time)}
			}),
			mut("deprecated fields", func(r *rand.Rand, o *eventsv1.Event) {
				o.DeprecatedCount = int32(pick(r, 0, 3))
				o.DeprecatedSource = corev1.EventSource{Component: pick(r, "", "kubelet")}
			}),
		},
		update: []mutation{
			mut("note", func(r *rand.Rand, o *eventsv1.Event) { o.Note = "changed" }),
			mut("series", func(r *rand.Rand, o *eventsv1.Event) {
				o.Series = &eventsv1.EventSeries{Count: int32(pick(r, 2, 1)), LastObservedTime: metav1.NewMicroTime(testTime.Time)}
			}),
			mut("reason", func(r *rand.Rand, o *eventsv1.Event) { o.Reason = "Other" }),
		},
	},
	snapshotKind,
	snapshotContentKind,
	snapshotClassKind,
}

var snapshotV1 = snapv1.SchemeGroupVersion

var snapshotKind = &kind{name: "VolumeSnapshot", gvr: snapshotV1.WithResource("volumesnapshots"), kind: "VolumeSnapshot", namespaced: true,
	empty: func() runtime.Object { return &snapv1.VolumeSnapshot{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr("data")},
				VolumeSnapshotClassName: ptr(pick(r, "csisim-snapclass", "other"))}}
	},
	create: []mutation{
		mut("source", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			if r.IntN(2) == 0 {
				o.Spec.Source = snapv1.VolumeSnapshotSource{}
			} else {
				o.Spec.Source.VolumeSnapshotContentName = ptr("content")
			}
		}),
		mut("class name", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			o.Spec.VolumeSnapshotClassName = ptr(pick(r, "", "Bad_Class"))
		}),
		mut("pre-provisioned", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			o.Spec.Source = snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr(pick(r, "content", ""))}
		}),
	},
	update: []mutation{
		mut("source claim", func(r *rand.Rand, o *snapv1.VolumeSnapshot) { o.Spec.Source.PersistentVolumeClaimName = ptr("other") }),
		mut("class name", func(r *rand.Rand, o *snapv1.VolumeSnapshot) { o.Spec.VolumeSnapshotClassName = ptr("changed") }),
	},
	status: []mutation{
		mut("ready", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			o.Status = &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr(true), BoundVolumeSnapshotContentName: ptr(pick(r, "content", ""))}
		}),
		mut("restore size", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			o.Status = &snapv1.VolumeSnapshotStatus{RestoreSize: ptr(resource.MustParse(pick(r, "1Gi", "-1")))}
		}),
		mut("error", func(r *rand.Rand, o *snapv1.VolumeSnapshot) {
			o.Status = &snapv1.VolumeSnapshotStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr("failed")}}
		}),
	},
}

var snapshotContentKind = &kind{name: "VolumeSnapshotContent", gvr: snapshotV1.WithResource("volumesnapshotcontents"), kind: "VolumeSnapshotContent",
	empty: func() runtime.Object { return &snapv1.VolumeSnapshotContent{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: snapv1.VolumeSnapshotContentSpec{Driver: "hostpath.csisim.io",
				DeletionPolicy:    pick(r, snapv1.VolumeSnapshotContentDelete, snapv1.VolumeSnapshotContentRetain),
				Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr("snap-" + name)},
				VolumeSnapshotRef: corev1.ObjectReference{Name: "snap", Namespace: testNamespace}}}
	},
	create: []mutation{
		mut("driver", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) { o.Spec.Driver = "" }),
		mut("deletion policy", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Spec.DeletionPolicy = snapv1.DeletionPolicy(pick(r, "", "Keep"))
		}),
		mut("source", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			if r.IntN(2) == 0 {
				o.Spec.Source = snapv1.VolumeSnapshotContentSource{}
			} else {
				o.Spec.Source.VolumeHandle = ptr("vol")
			}
		}),
		mut("snapshot ref", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Spec.VolumeSnapshotRef = corev1.ObjectReference{Name: pick(r, "", "snap")}
		}),
		mut("volume mode", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Spec.SourceVolumeMode = ptr(corev1.PersistentVolumeMode(pick(r, "Block", "Raw")))
		}),
	},
	update: []mutation{
		mut("snapshot handle", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) { o.Spec.Source.SnapshotHandle = ptr("changed") }),
		mut("deletion policy", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Spec.DeletionPolicy = snapv1.DeletionPolicy(pick(r, "Retain", "Delete", "Keep"))
		}),
		mut("snapshot ref", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) { o.Spec.VolumeSnapshotRef.UID = "u-1" }),
	},
	status: []mutation{
		mut("ready", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Status = &snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr(true), SnapshotHandle: ptr(pick(r, "h", ""))}
		}),
		mut("restore size", func(r *rand.Rand, o *snapv1.VolumeSnapshotContent) {
			o.Status = &snapv1.VolumeSnapshotContentStatus{RestoreSize: ptr(int64(pick(r, 1024, -1)))}
		}),
	},
}

var snapshotClassKind = &kind{name: "VolumeSnapshotClass", gvr: snapshotV1.WithResource("volumesnapshotclasses"), kind: "VolumeSnapshotClass",
	empty: func() runtime.Object { return &snapv1.VolumeSnapshotClass{} },
	valid: func(r *rand.Rand, name string) runtime.Object {
		return &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: "hostpath.csisim.io",
			DeletionPolicy: pick(r, snapv1.VolumeSnapshotContentDelete, snapv1.VolumeSnapshotContentRetain),
			Parameters:     map[string]string{"a": "b"}}
	},
	create: []mutation{
		mut("driver", func(r *rand.Rand, o *snapv1.VolumeSnapshotClass) { o.Driver = "" }),
		mut("deletion policy", func(r *rand.Rand, o *snapv1.VolumeSnapshotClass) {
			o.DeletionPolicy = snapv1.DeletionPolicy(pick(r, "", "Keep"))
		}),
	},
	update: []mutation{
		mut("driver", func(r *rand.Rand, o *snapv1.VolumeSnapshotClass) { o.Driver = "other.example.com" }),
		mut("parameters", func(r *rand.Rand, o *snapv1.VolumeSnapshotClass) { o.Parameters = map[string]string{"a": "c"} }),
		mut("deletion policy", func(r *rand.Rand, o *snapv1.VolumeSnapshotClass) {
			o.DeletionPolicy = snapv1.DeletionPolicy(pick(r, "Retain", "Keep"))
		}),
	},
}
