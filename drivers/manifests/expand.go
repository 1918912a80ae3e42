package manifests

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// envOf is a container's environment as far as the manifests alone say
// it: each literal value, itself expanded against the variables before it
// as the kubelet expands it, and a downward-API metadata.namespace as the
// workload's namespace (when given). Other valueFrom sources are known only
// in a running pod: their variables are left out, so that a $(VAR) naming
// one stays as written.
func envOf(c *corev1.Container, namespace string) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expansion.Expand(e.Value, expansion.MappingFuncFor(env))
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" && namespace != "":
			env[e.Name] = namespace
		}
	}
	return env
}

// expandArgs expands each arg as the kubelet expands a container's
// command and args (kubelet's container.ExpandContainerCommandAndArgs,
// with its third_party/forked/golang/expansion: $$ is a $, a $(VAR) env
// does not define stays as written).
func expandArgs(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expansion.Expand(a, expansion.MappingFuncFor(env))
	}
	return out
}
