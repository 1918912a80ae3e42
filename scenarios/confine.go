package scenarios

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const hostnameLabel = "kubernetes.io/hostname"

// podSpecPaths are where the pod specs of the kinds a scenario applies
// are: a Pod's own, a workload's template.
var podSpecPaths = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
}

// confinePods keeps the pods of obj on the workers hosts (sharedView): a
// pod that names no node and no kubernetes.io/hostname of its own gets
// a nodeSelector for the one host, or a node affinity term for several,
// added to each of its required terms (terms are ORed, their
// expressions ANDed).
func confinePods(obj *unstructured.Unstructured, hosts []string) error {
	path, ok := podSpecPaths[obj.GetKind()]
	if !ok || len(hosts) == 0 {
		return nil
	}
	spec, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil || !found {
		return err
	}
	if name, _ := spec["nodeName"].(string); name != "" {
		return nil
	}
	selector, _ := spec["nodeSelector"].(map[string]any)
	if _, ok := selector[hostnameLabel]; ok {
		return nil
	}
	if len(hosts) == 1 {
		if selector == nil {
			selector = map[string]any{}
		}
		selector[hostnameLabel] = hosts[0]
		spec["nodeSelector"] = selector
	} else if err := requireHosts(spec, hosts); err != nil {
		return err
	}
	if err := unstructured.SetNestedMap(obj.Object, spec, path...); err != nil {
		return fmt.Errorf("keep its pods on %v: %w", hosts, err)
	}
	return nil
}

// requireHosts ANDs "kubernetes.io/hostname In hosts" into every required
// node affinity term of spec, or makes the one term.
func requireHosts(spec map[string]any, hosts []string) error {
	values := make([]any, len(hosts))
	for i, h := range hosts {
		values[i] = h
	}
	expr := map[string]any{"key": hostnameLabel, "operator": "In", "values": values}
	path := []string{"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}
	terms, _, err := unstructured.NestedSlice(spec, path...)
	if err != nil {
		return fmt.Errorf("its node affinity: %w", err)
	}
	if len(terms) == 0 {
		terms = []any{map[string]any{}}
	}
	for i, t := range terms {
		term, _ := t.(map[string]any)
		if term == nil {
			term = map[string]any{}
		}
		exprs, _ := term["matchExpressions"].([]any)
		term["matchExpressions"] = append(exprs, expr)
		terms[i] = term
	}
	return unstructured.SetNestedSlice(spec, terms, path...)
}
