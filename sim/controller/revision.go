package controller

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// TemplateRevisionPatch is what a StatefulSet's or DaemonSet's
// ControllerRevision stores: the pod template as a strategic merge patch
// that replaces it (kubernetes pkg/controller/statefulset
// stateful_set_utils.go and pkg/controller/daemon update.go, getPatch).
func TemplateRevisionPatch(tmpl corev1.PodTemplateSpec) ([]byte, error) {
	data, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	var template map[string]any
	if err := json.Unmarshal(data, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}
