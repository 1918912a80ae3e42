package unmodelled

import "strings"

// Row is one field csisim does not model.
type Row struct {
	// PodSpec: the field is in a pod spec — a Pod's spec and the pod
	// template of a Deployment, ReplicaSet or StatefulSet
	// (spec.template.spec) — and Path starts there.
	PodSpec bool
	// Kinds are the kinds that hold the field, as group/Kind ("Pod" for
	// the core group), when it is not a pod spec's; Path starts at the
	// object.
	Kinds []string
	// Path is the field's path; [*] stands for every item of a list,
	// {a,b} for either field.
	Path string
	// When says which values are refused; empty: any value that is set.
	When string
	// Changes is what the real cluster would do differently ("it would
	// change ...").
	Changes string
	// Why is why csisim does not act on it.
	Why string
	// Needs is what to run instead.
	Needs Backend
	// refused says whether a value (and the container it is in, for a
	// container's field) is refused; nil: any value that is set.
	refused func(v any, container map[string]any) bool
	// update, when set, makes the row judge only updates, by the object
	// before and after.
	update func(obj, old map[string]any) bool
}

// Kind is one kind a real cluster runs that csisim does not serve: the
// API server answers that it has no such resource, and a scenario that
// applies one is refused when it loads on the simulator.
type Kind struct {
	Group, Version, Kind string
	Changes, Why         string
	Needs                Backend
}

func (r *Row) isRefused(v any, container map[string]any) bool {
	if r.refused == nil {
		return set(v)
	}
	return r.refused(v, container)
}

// Fields is the table of what csisim does not model, by kind.
var Fields = []Row{
	// The kubelet: csisim's simulated kubelet sets up claims, CSI
	// inline and generic ephemeral volumes and starts containers that run
	// its workload; it runs no container process of the pod's own.
	{PodSpec: true, Path: "{containers,initContainers}[*].lifecycle",
		Changes: "when the container counts as started (postStart) and how long it takes to stop (preStop, stopSignal), and so when its volumes are unmounted",
		Why:     "the simulated kubelet runs no hooks: its containers start at once and stop at once", Needs: RealNodes},
	{PodSpec: true, Path: "{containers,initContainers}[*].volumeMounts[*].mountPropagation", When: "HostToContainer or Bidirectional",
		Changes: "whether mounts made under the volume reach the container from the host, or the host from the container",
		Why:     "the simulated containers are no mount namespaces: there is nothing to propagate to", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return known(v) && v != "None" }},
	{PodSpec: true, Path: "hostUsers", When: "false",
		Changes: "the ownership of the files in the pod's volumes as its containers see them (idmapped mounts in the pod's user namespace)",
		Why:     "the simulated kubelet makes no user namespace", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return v == false }},
	{PodSpec: true, Path: "volumes[*].{configMap,secret}", When: "optional is not true",
		Changes: "whether the pod starts: the kubelet mounts the ConfigMap or Secret and, while it (or a key it lists) is missing, fails the mount (FailedMount) and the pod stays ContainerCreating",
		Why:     "the simulated kubelet sets up only claims, CSI inline and generic ephemeral volumes", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return !optional(v) }},
	{PodSpec: true, Path: "volumes[*].projected.sources[*].{configMap,secret}", When: "optional is not true",
		Changes: "whether the pod starts: the kubelet fails the mount (FailedMount) while the ConfigMap or Secret is missing",
		Why:     "the simulated kubelet sets up only claims, CSI inline and generic ephemeral volumes", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return !optional(v) }},
	{PodSpec: true, Path: "volumes[*].projected.sources[*].{clusterTrustBundle,podCertificate}",
		Changes: "whether the pod starts: the kubelet waits for the trust bundle or the pod's certificate before it mounts the volume",
		Why:     "the simulated kubelet sets up only claims, CSI inline and generic ephemeral volumes", Needs: RealNodes},
	{PodSpec: true, Path: "volumes[*].{" + strings.Join(inTreeVolumes, ",") + "}",
		Changes: "the pod's volumes: the kubelet's in-tree volume plugin mounts it on the node",
		Why:     "the simulated kubelet has no in-tree volume plugin: it sets up only claims (their in-tree PVs of a migrated plugin included), CSI inline and generic ephemeral volumes and the inline volumes of the in-tree plugins that migrated to CSI", Needs: RealNodes},
	{PodSpec: true, Path: "{containers,initContainers}[*].env[*].valueFrom.{configMapKeyRef,secretKeyRef}",
		When:    "optional is not true, in a container with no subPathExpr",
		Changes: "whether the container starts: while the ConfigMap, Secret or key is missing it waits with CreateContainerConfigError",
		Why:     "the simulated kubelet makes a container's environment only to expand a subPathExpr", Needs: RealNodes,
		refused: envRefused},
	{PodSpec: true, Path: "{containers,initContainers}[*].envFrom[*].{configMapRef,secretRef}",
		When:    "optional is not true, in a container with no subPathExpr",
		Changes: "whether the container starts: while the ConfigMap or Secret is missing it waits with CreateContainerConfigError",
		Why:     "the simulated kubelet makes a container's environment only to expand a subPathExpr", Needs: RealNodes,
		refused: envRefused},
	{PodSpec: true, Path: "activeDeadlineSeconds",
		Changes: "how long the pod runs: the kubelet fails it (DeadlineExceeded) once the deadline has passed, stops its containers and unmounts its volumes",
		Why:     "the simulated kubelet keeps a pod running until it is deleted", Needs: RealNodes},
	{PodSpec: true, Path: "readinessGates",
		Changes: "the pod's Ready condition, which waits for the gates' conditions, and so a StatefulSet's next pod and a Deployment's availability",
		Why:     "the simulated kubelet makes a pod Ready when its containers have started", Needs: RealNodes},
	{PodSpec: true, Path: "hostNetwork", When: "true",
		Changes: "the pod's IP (the node's) and the scheduler's NodePorts filter, which keeps pods with the same container ports apart",
		Why:     "the simulated kubelet gives every pod an address of its own, and the simulated scheduler has no NodePorts filter", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return v == true }},
	{PodSpec: true, Path: "os.name", When: "windows",
		Changes: "whether a Linux node's kubelet admits the pod (it refuses a pod for another OS)",
		Why:     "every simulated node is a Linux node that admits every pod", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return known(v) && v != "linux" }},

	// The scheduler: csisim's simulated kube-scheduler runs the default
	// profile's filters and scores that sim/scheduler lists.
	{PodSpec: true, Path: "schedulingGates",
		Changes: "when the pod is scheduled: the scheduler leaves it Pending (SchedulingGated) until every gate is removed",
		Why:     "the simulated scheduler has no scheduling gates", Needs: RealControlPlane},
	{PodSpec: true, Path: "{containers,initContainers}[*].ports[*].hostPort",
		Changes: "where the pod may run: the scheduler's NodePorts filter puts no two pods with the same host port on one node",
		Why:     "the simulated scheduler has no NodePorts filter", Needs: RealControlPlane},
	{PodSpec: true, Path: "resourceClaims",
		Changes: "where and whether the pod is scheduled: the scheduler allocates the claims' devices (DynamicResources) first",
		Why:     "csisim serves no ResourceClaims and its scheduler has no DynamicResources plugin", Needs: RealControlPlane},
	{PodSpec: true, Path: "{containers,initContainers}[*].resources.claims",
		Changes: "where and whether the pod is scheduled: the scheduler allocates the claims' devices (DynamicResources) first",
		Why:     "csisim serves no ResourceClaims and its scheduler has no DynamicResources plugin", Needs: RealControlPlane},
	{PodSpec: true, Path: "resources",
		Changes: "what the scheduler's NodeResourcesFit counts for the pod (its pod-level requests instead of its containers' sum)",
		Why:     "the simulated scheduler counts the containers' requests", Needs: RealControlPlane},
	{PodSpec: true, Path: "runtimeClassName",
		Changes: "whether the API server admits the pod (the RuntimeClass must exist) and the overhead and node selector the class adds to it",
		Why:     "csisim serves no RuntimeClasses", Needs: RealControlPlane},

	// The workload controllers.
	{Kinds: []string{"apps/Deployment", "apps/ReplicaSet", "apps/StatefulSet"}, Path: "spec.minReadySeconds", When: "more than 0",
		Changes: "when a Ready pod counts as available, and so status.availableReplicas, a Deployment's rollout pace and its Available condition",
		Why:     "the simulated controllers count a pod available as soon as it is Ready", Needs: RealControlPlane,
		refused: positive},
	{Kinds: []string{"apps/Deployment"}, Path: "spec.paused", When: "true",
		Changes: "the rollout: a paused Deployment makes no new ReplicaSet for a changed template",
		Why:     "the simulated Deployment controller does not pause", Needs: RealControlPlane,
		refused: func(v any, _ map[string]any) bool { return v == true }},
	{Kinds: []string{"apps/StatefulSet"}, Path: "spec.template", When: "changed by an update, under updateStrategy RollingUpdate (the default)",
		Changes: "the set's pods: the StatefulSet controller replaces them from the new template, highest ordinal first, each on its claims once the one before is Ready",
		Why:     "the simulated StatefulSet controller makes new pods from the current template but replaces none (as OnDelete)", Needs: RealControlPlane,
		refused: func(any, map[string]any) bool { return true }, update: statefulSetTemplateChanged},

	// The PV controller.
	{Kinds: []string{"PersistentVolume"}, Path: "spec.persistentVolumeReclaimPolicy", When: "Recycle",
		Changes: "a released volume: the PV controller's recycler pod scrubs it (rm -rf) and makes it Available again",
		Why:     "the simulated PV controller leaves a Recycle volume Released", Needs: RealNodes,
		refused: func(v any, _ map[string]any) bool { return v == "Recycle" }},
}

// inTreeVolumes are the pod volume types a real kubelet mounts with an
// in-tree plugin, which csisim's does not. Not among them: the inline
// volumes of the plugins that migrated to CSI (awsElasticBlockStore,
// gcePersistentDisk, azureDisk, azureFile, cinder, vsphereVolume,
// portworxVolume), which the simulated attach/detach controller,
// external-attacher and kubelet translate to their CSI driver's volume as
// v1.37's do (sim/migration Inline), and those of the plugins v1.37
// removed without a migration (rbd, cephfs, glusterfs, flocker, quobyte,
// scaleIO, storageos, photonPersistentDisk), for which the simulated
// kubelet finds no plugin as the real one does (sim/migration
// RemovedInline). A PersistentVolume of these types is not refused: a
// claim's PV of a plugin that migrated is set up as its CSI driver's
// volume, one of a removed plugin fails as on v1.37 (sim/migration), and
// binding and reclaim need no plugin.
var inTreeVolumes = []string{"hostPath", "nfs", "iscsi", "fc", "flexVolume", "gitRepo", "image"}

// Kinds are the kinds a real cluster runs that csisim does not serve,
// those a storage story meets.
var Kinds = []Kind{
	{Group: "apps", Version: "v1", Kind: "DaemonSet", Needs: RealControlPlane,
		Changes: "the pods: the DaemonSet controller makes one on every node that fits", Why: "csisim runs its DaemonSet controller only for a driver's deployment (--deploy, cluster.deploy) and in serve"},
	{Group: "batch", Version: "v1", Kind: "Job", Needs: RealNodes,
		Changes: "the pods: the Job controller makes them until enough have succeeded", Why: "csisim has no Job controller, and its containers never exit"},
	{Group: "batch", Version: "v1", Kind: "CronJob", Needs: RealNodes,
		Changes: "the pods: the CronJob controller makes a Job on its schedule", Why: "csisim has no CronJob controller, and its containers never exit"},
	{Group: "", Version: "v1", Kind: "ReplicationController", Needs: RealControlPlane,
		Changes: "the pods: the replication manager keeps spec.replicas of them", Why: "csisim has no replication manager"},
	{Group: "", Version: "v1", Kind: "ResourceQuota", Needs: RealControlPlane,
		Changes: "which claims and pods the API server admits (storage requested per class, number of claims)", Why: "csisim's API server has no ResourceQuota admission"},
	{Group: "", Version: "v1", Kind: "LimitRange", Needs: RealControlPlane,
		Changes: "the requests the API server gives pods and the claim sizes it admits", Why: "csisim's API server has no LimitRanger admission"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Needs: RealControlPlane,
		Changes: "which pods an eviction (kubectl drain) may take", Why: "csisim serves no Eviction API"},
	{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass", Needs: RealControlPlane,
		Changes: "the pods that name it: their overhead and node selector", Why: "csisim serves no RuntimeClasses"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Needs: RealControlPlane,
		Changes: "a workload's replicas, from its pods' metrics", Why: "csisim has no metrics and no autoscaler"},
}

// set: a value that says something — not null, false, 0, "" or empty.
func set(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case int64:
		return v != 0
	case float64:
		return v != 0
	case map[string]any:
		return len(v) > 0
	case []any:
		return len(v) > 0
	}
	return true
}

// known: not a value a scenario still has to expand (${var}): that one
// is judged when the object is applied.
func known(v any) bool {
	s, ok := v.(string)
	return !ok || !strings.Contains(s, "${")
}

// positive: a number above 0.
func positive(v any, _ map[string]any) bool {
	switch v := v.(type) {
	case int64:
		return v > 0
	case float64:
		return v > 0
	}
	return false
}

// optional: a reference that says optional: true.
func optional(v any) bool {
	m, _ := v.(map[string]any)
	return m["optional"] == true
}

// envRefused: a ConfigMap or Secret reference in a container's
// environment that must exist, in a container whose environment the
// simulated kubelet never makes (it makes it for a subPathExpr, and
// then fails the container as the real one does).
func envRefused(v any, container map[string]any) bool {
	if optional(v) {
		return false
	}
	mounts, _ := container["volumeMounts"].([]any)
	for _, m := range mounts {
		if mm, ok := m.(map[string]any); ok && set(mm["subPathExpr"]) {
			return false
		}
	}
	return true
}
