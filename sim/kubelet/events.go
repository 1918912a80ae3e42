package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The events a real kubelet v1.37 posts about its node and a pod's
// containers, in its words (pkg/kubelet/kubelet.go, pkg/kubelet/nodestatus/
// setters.go, pkg/kubelet/cm/node_container_manager_linux.go,
// pkg/kubelet/images/image_manager.go, pkg/kubelet/kuberuntime/
// kuberuntime_container.go). csisim diff compares them with the real ones.

// nodeRef is how the kubelet names its node in events: the UID is the
// node's name, not the Node object's UID.
func (k *Kubelet) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, UID: types.UID(k.cfg.NodeName)}
}

// startEvents are posted by a kubelet process when it starts; registered
// says it has just registered the Node, whose conditions it then sets for
// the first time (each first setting is an event).
func (k *Kubelet) startEvents(registered bool) {
	ref := k.nodeRef()
	k.events.Event(ref, corev1.EventTypeNormal, "Starting", "Starting kubelet.")
	if registered {
		for _, reason := range []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"} {
			k.events.Eventf(ref, corev1.EventTypeNormal, reason, "Node %s status is now: %s", k.cfg.NodeName, reason)
		}
	}
	k.events.Event(ref, corev1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
	if registered {
		k.events.Eventf(ref, corev1.EventTypeNormal, "NodeReady", "Node %s status is now: %s", k.cfg.NodeName, "NodeReady")
	}
}

// containerRef names one container of a pod in an event, as the kubelet's
// does: spec.containers{name} (spec.initContainers{name}).
func containerRef(pod *corev1.Pod, field, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		APIVersion: "v1", ResourceVersion: pod.ResourceVersion, FieldPath: fmt.Sprintf("%s{%s}", field, name)}
}

// containersStopping posts the kubelet's Killing event for each running
// container of a pod being deleted.
func (k *Kubelet) containersStopping(pod *corev1.Pod, sb *sandbox) {
	for _, c := range pod.Spec.Containers {
		if _, notStarted := sb.waitingFor(c.Name); notStarted || sb.crashed[c.Name] != nil && !sb.crashed[c.Name].running {
			continue // nothing runs to stop
		}
		k.events.Eventf(containerRef(pod, "spec.containers", c.Name), corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
	}
}
