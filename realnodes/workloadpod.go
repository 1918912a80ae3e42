package realnodes

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WorkloadPod makes a Pod manifest runnable on a real node without a
// registry: every container (and init container) runs csisim's workload
// image instead of the image it names, which could not be pulled, and is
// given the pod's identity and its claims' mount paths, so it does what a
// simulated node's containers do: read the markers earlier pods of each
// claim wrote, write its own, log both (kubectl logs shows them) and wait
// to be stopped. Everything else in the manifest is left as written. Other
// kinds are returned unchanged.
func WorkloadPod(obj *unstructured.Unstructured) error {
	if obj.GetKind() != "Pod" || obj.GroupVersionKind().Group != "" {
		return nil
	}
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return nil // the API server says what is wrong with it
	}
	claims := map[string]claimVolume{} // by volume name
	if vols, ok := spec["volumes"].([]any); ok {
		for _, v := range vols {
			vol, _ := v.(map[string]any)
			src, _ := vol["persistentVolumeClaim"].(map[string]any)
			name, _ := vol["name"].(string)
			if src == nil || name == "" {
				continue
			}
			claim, _ := src["claimName"].(string)
			ro, _ := src["readOnly"].(bool)
			claims[name] = claimVolume{claim: claim, readOnly: ro}
		}
	}
	for _, field := range []string{"initContainers", "containers"} {
		list, ok := spec[field].([]any)
		if !ok {
			continue
		}
		for i, c := range list {
			container, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("spec.%s[%d] is not an object", field, i)
			}
			adaptContainer(container, claims)
		}
	}
	return nil
}

type claimVolume struct {
	claim    string
	readOnly bool
}

func adaptContainer(c map[string]any, claims map[string]claimVolume) {
	args := []any{"run"}
	if mounts, ok := c["volumeMounts"].([]any); ok {
		for _, m := range mounts {
			mount, _ := m.(map[string]any)
			name, _ := mount["name"].(string)
			path, _ := mount["mountPath"].(string)
			cv, ok := claims[name]
			if !ok || path == "" {
				continue
			}
			flag := "--volume="
			if ro, _ := mount["readOnly"].(bool); ro || cv.readOnly {
				flag = "--read-only-volume="
			}
			args = append(args, flag+path+"="+cv.claim)
		}
	}
	c["image"] = WorkloadImage
	c["imagePullPolicy"] = "Never"
	c["command"] = []any{workloadPath}
	c["args"] = args
	env, _ := c["env"].([]any)
	for _, e := range []struct{ name, field string }{
		{"POD_UID", "metadata.uid"}, {"POD_NAME", "metadata.name"}, {"POD_NAMESPACE", "metadata.namespace"},
	} {
		env = append(env, map[string]any{"name": e.name, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": e.field}}})
	}
	c["env"] = env
}
