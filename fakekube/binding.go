package fakekube

// The pods/binding subresource: the scheduler's write of a pod's node.

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// serveBinding assigns a pod to a node, as the scheduler does through the
// pods/binding subresource.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, req request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var binding corev1.Binding
	if err := decodeInto(r, body, &binding); err != nil {
		writeError(w, err)
		return
	}
	if binding.Target.Name == "" {
		writeError(w, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, req.name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")}))
		return
	}
	labels := s.bindingLabels(&binding)
	mutate := func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", req.name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is already assigned to node %q", req.name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		// The nomination of a preemption is cleared (the
		// ClearingNominatedNodeNameAfterBinding gate, beta and on since
		// v1.35; pkg/registry/core/pod/storage/storage.go).
		pod.Status.NominatedNodeName = ""
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		for k, v := range labels {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(s.clock.Now()).Rfc3339Copy()})
		return pod, nil
	}
	// A binding changes spec.nodeName and the PodScheduled condition in one
	// write, as the real server's binding storage does.
	_, err = s.store.update(r.Context(), req.actor, "", "bind", req.res, req.namespace, req.name, "binding", nil, mutate, false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// topologyLabels are the node labels the PodTopologyLabels admission
// plugin (on by default since v1.35) copies onto a pod bound to the node.
var topologyLabels = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

// bindingLabels are the labels a binding puts on its pod: its own, and
// the target node's zone and region, overwriting the pod's.
func (s *Server) bindingLabels(binding *corev1.Binding) map[string]string {
	out := map[string]string{}
	for k, v := range binding.Labels {
		out[k] = v
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return out
	}
	res, err := s.reg.lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	if err != nil {
		return out
	}
	obj, err := s.store.get(res, "", binding.Target.Name)
	if err != nil {
		return out // no node, no labels: as the plugin ignores NotFound
	}
	node := obj.(*corev1.Node)
	for _, k := range topologyLabels {
		if v, ok := node.Labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
