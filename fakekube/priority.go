package fakekube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PriorityClasses and the Priority admission plugin
// (kubernetes plugin/pkg/admission/priority/admission.go): a pod's
// priorityClassName gives it the class's value as spec.priority and its
// preemptionPolicy; a class that does not exist refuses the pod (403);
// without a name, the global default class, if any, else priority 0.

var schedulingV1 = schedulingv1.SchemeGroupVersion

// systemPriorityClasses are the classes the real API server creates at
// start (kubernetes pkg/apis/scheduling/types.go, SystemPriorityClasses).
func systemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

// admitPriorityLocked is the Priority admission plugin for a pod being
// created.
func (s *store) admitPriorityLocked(res *resource, pod *corev1.Pod) error {
	pcRes := s.reg.byGVR[schedulingV1.WithResource("priorityclasses")]
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		o, found := s.objects[pcRes][objectKey("", name)]
		if !found {
			return apierrors.NewForbidden(res.groupResource(), admissionName(pod), fmt.Errorf("no PriorityClass with name %v was found", name))
		}
		class = o.(*schedulingv1.PriorityClass)
	} else {
		// The global default: of several, the one with the lowest value.
		for _, o := range s.objects[pcRes] {
			pc := o.(*schedulingv1.PriorityClass)
			if pc.GlobalDefault && (class == nil || pc.Value < class.Value) {
				class = pc
			}
		}
		if class == nil {
			// No default class: priority 0, preempting lower ones.
			pod.Spec.Priority = ptrTo(int32(0))
			pod.Spec.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
			return nil
		}
		pod.Spec.PriorityClassName = class.Name
	}
	pod.Spec.Priority = ptrTo(class.Value)
	if class.PreemptionPolicy != nil {
		pod.Spec.PreemptionPolicy = ptrTo(*class.PreemptionPolicy)
	}
	return nil
}
