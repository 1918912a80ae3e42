package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podRequests is what the NodeResourcesFit plugin counts for a pod: per
// resource, the sum over its containers (restartable init containers,
// i.e. sidecars, included) or the largest request of an init container
// that runs alone, whichever is more, plus the pod's overhead.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(list corev1.ResourceList) {
		for name, q := range list {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	sidecars := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		add(c.Resources.Requests)
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c.Resources.Requests)
			for name, q := range c.Resources.Requests {
				s := sidecars[name]
				s.Add(q)
				sidecars[name] = s
			}
			continue
		}
		// An init container runs with the sidecars started before it.
		for name, q := range c.Resources.Requests {
			alone := q.DeepCopy()
			alone.Add(sidecars[name])
			if have, ok := out[name]; !ok || alone.Cmp(have) > 0 {
				out[name] = alone
			}
		}
	}
	add(pod.Spec.Overhead)
	return out
}

// insufficientResources is the NodeResourcesFit plugin's filter: the
// reasons the node cannot hold the pod next to the pods it runs, in the
// real plugin's words: "Too many pods", then "Insufficient <resource>" for
// each resource the pod asks for that the node's allocatable cannot cover.
// unresolvable says that the pod asks for more than the node has at all,
// so that preemption cannot help.
func insufficientResources(pod *corev1.Pod, node *corev1.Node, running []*corev1.Pod) (reasons []string, unresolvable bool) {
	allocatable := node.Status.Allocatable
	if max, ok := allocatable[corev1.ResourcePods]; ok && int64(len(running))+1 > max.Value() {
		reasons = append(reasons, "Too many pods")
	}
	want := podRequests(pod)
	used := corev1.ResourceList{}
	for _, p := range running {
		for name, q := range podRequests(p) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := want[name]; ok && !q.IsZero() && exceeds(q, used[name], allocatable[name]) {
			reasons = append(reasons, "Insufficient "+string(name))
			unresolvable = unresolvable || q.Cmp(allocatable[name]) > 0
		}
	}
	for name, q := range want {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			continue
		}
		if !q.IsZero() && exceeds(q, used[name], allocatable[name]) {
			reasons = append(reasons, "Insufficient "+string(name))
			unresolvable = unresolvable || q.Cmp(allocatable[name]) > 0
		}
	}
	return reasons, unresolvable
}

func exceeds(want, used, allocatable resource.Quantity) bool {
	total := want.DeepCopy()
	total.Add(used)
	return total.Cmp(allocatable) > 0
}
