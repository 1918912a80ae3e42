package realnodes

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WorkloadPod makes a manifest that makes pods runnable on a real node
// without a registry: every container (and init container) of a Pod, or of
// the pod template of a workload (Deployment, ReplicaSet, StatefulSet,
// DaemonSet, Job, CronJob), runs csisim's workload image instead of the
// image it names, which could not be pulled, and is given the pod's
// identity and its claims' mount paths, so it does what a simulated node's
// containers do: read the markers earlier pods of each claim wrote, write
// its own, log both (kubectl logs shows them) and wait to be stopped.
// Everything else in the manifest is left as written; other kinds are
// returned unchanged.
//
// A template's pods are named only when they are made, so a claim named
// after its pod — a StatefulSet's volumeClaimTemplates (<template>-<pod>)
// or a generic ephemeral volume (<pod>-<volume>) — is passed as
// $(POD_NAME) in the container's arguments, which the kubelet expands from
// the container's environment.
func WorkloadPod(obj *unstructured.Unstructured) error {
	path, ok := podSpecPath(obj)
	if !ok {
		return nil
	}
	spec, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	podSpec, isMap := spec.(map[string]any)
	if !ok || !isMap {
		return nil // the API server says what is wrong with it
	}
	claims := podClaims(podSpec)
	if obj.GetKind() == "StatefulSet" {
		templates, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
		for _, t := range templates {
			tm, _ := t.(map[string]any)
			name, _, _ := unstructured.NestedString(tm, "metadata", "name")
			if name != "" {
				// A pod volume of the same name wins, as in the
				// StatefulSet controller.
				if _, taken := claims[name]; !taken {
					claims[name] = claimVolume{claim: name + "-$(POD_NAME)"}
				}
			}
		}
	}
	for _, field := range []string{"initContainers", "containers"} {
		list, ok := podSpec[field].([]any)
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

// podSpecPath is where obj's pod spec is, by kind; false for a kind that
// makes no pods. Only the built-in groups are known: a custom resource's
// pods are its controller's business.
func podSpecPath(obj *unstructured.Unstructured) ([]string, bool) {
	gvk := obj.GroupVersionKind()
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		return []string{"spec"}, true
	case gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "ReplicaSet" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet"),
		gvk.Group == "batch" && gvk.Kind == "Job":
		return []string{"spec", "template", "spec"}, true
	case gvk.Group == "batch" && gvk.Kind == "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}, true
	}
	return nil, false
}

// podClaims are the claims of a pod spec's volumes, by volume name.
func podClaims(spec map[string]any) map[string]claimVolume {
	claims := map[string]claimVolume{}
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		vol, _ := v.(map[string]any)
		name, _ := vol["name"].(string)
		if name == "" {
			continue
		}
		if src, ok := vol["persistentVolumeClaim"].(map[string]any); ok {
			claim, _ := src["claimName"].(string)
			ro, _ := src["readOnly"].(bool)
			claims[name] = claimVolume{claim: claim, readOnly: ro}
		} else if _, ok := vol["ephemeral"].(map[string]any); ok {
			// The ephemeral volume controller names the claim
			// <pod>-<volume>.
			claims[name] = claimVolume{claim: "$(POD_NAME)-" + name}
		}
	}
	return claims
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
