package manifests

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
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
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" && namespace != "":
			env[e.Name] = namespace
		}
	}
	return env
}

// expandArgs expands each arg as the kubelet expands a container's
// command and args (kubelet's container.ExpandContainerCommandAndArgs,
// after third_party/forked/golang/expansion).
func expandArgs(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expand(a, env)
	}
	return out
}

// expand replaces each $(VAR) of s whose VAR env defines by its value;
// $$ is an escaped $; a $(VAR) env does not define, a $ before anything
// else and an unclosed $( stay as written.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
