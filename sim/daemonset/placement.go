package daemonset

// Where a DaemonSet's pods go: the nodes that should run one, the
// tolerations the controller adds to every daemon pod, and the node-name
// affinity that pins a pod to its node, after kubernetes
// pkg/controller/daemon (daemon_controller.go NodeShouldRunDaemonPod,
// predicates, NewPod) and pkg/controller/daemon/util (daemonset_util.go
// AddOrUpdateDaemonPodTolerations, ReplaceDaemonSetPodNodeNameNodeAffinity,
// GetTargetNodeName).

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// daemonTolerations are the tolerations the controller adds to every
// daemon pod (daemonset_util.go AddOrUpdateDaemonPodTolerations): it
// survives a node going not ready or unreachable, and is placed on nodes
// under pressure or cordoned. networkUnavailable is added only to a pod
// on the host's network.
var (
	daemonTolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	networkUnavailableToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable,
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
)

// addDaemonTolerations adds the daemon tolerations to spec, each replacing
// one of the same key, operator and effect already there
// (v1helper.AddOrUpdateTolerationInPodSpec).
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(add[:len(add):len(add)], networkUnavailableToleration)
	}
	for _, t := range add {
		replaced := false
		for i := range spec.Tolerations {
			old := &spec.Tolerations[i]
			if old.Key == t.Key && old.Operator == t.Operator && old.Effect == t.Effect {
				*old, replaced = t, true
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// shouldRun says whether node should run a pod of ds that it does not run
// yet, and whether a pod of ds already there should go on running
// (NodeShouldRunDaemonPod): a node the template's nodeName, nodeSelector
// or required node affinity leaves out does neither; a node with a taint
// the pod (with the daemon tolerations) does not tolerate gets no new
// pod, and keeps one only if the untolerated taints are all NoSchedule.
func shouldRun(node *corev1.Node, ds *appsv1.DaemonSet) (run, keepRunning bool) {
	pod := podForNode(ds, node.Name)
	if name := ds.Spec.Template.Spec.NodeName; name != "" && name != node.Name {
		return false, false
	}
	// A parse error of the affinity counts as no match, as upstream's
	// "ignore parsing errors for backwards compatibility" leaves it.
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !fits {
		return false, false
	}
	untolerated := func(effects ...corev1.TaintEffect) bool {
		_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *corev1.Taint) bool {
				for _, e := range effects {
					if t.Effect == e {
						return true
					}
				}
				return false
			}, false)
		return found
	}
	if untolerated(corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return false, !untolerated(corev1.TaintEffectNoExecute)
	}
	return true, true
}

// podForNode is the pod of ds the predicates judge for node (NewPod): the
// template with the daemon tolerations, on node.
func podForNode(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Namespace = ds.Namespace
	pod.Spec.NodeName = node
	addDaemonTolerations(&pod.Spec)
	return pod
}

// pinToNode replaces the required node affinity of a new daemon pod by one
// that selects node by name (matchFields metadata.name In [node]), so that
// the scheduler binds it there (ReplaceDaemonSetPodNodeNameNodeAffinity);
// the preferred terms and the pod (anti-)affinity stay.
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// targetNode is the node a daemon pod is for: its spec.nodeName once
// bound, before that the node its node-name affinity pins it to
// (GetTargetNodeName).
func targetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", errors.New("no required node affinity")
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn {
				if len(r.Values) != 1 {
					return "", errors.New("the metadata.name field requirement names more than one node")
				}
				return r.Values[0], nil
			}
		}
	}
	return "", errors.New("no node name in the required node affinity")
}
