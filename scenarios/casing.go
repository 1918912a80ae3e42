package scenarios

import "strings"

// Scenario keys have one casing, lowerCamel, as the fields of Kubernetes
// objects: jsonPath, labelSelector, ignoreNotFound, and the fault steps
// nodeLoss, csiError, driverRestart. Earlier files wrote some keys
// otherwise (jsonpath, node-loss); such a key gets a message naming the
// key it is now, rather than "unknown field".

// lowerCamel turns a kebab- or snake-case word into lowerCamel:
// node-loss → nodeLoss, ignore_not_found → ignoreNotFound.
func lowerCamel(s string) string {
	var b strings.Builder
	upper := false
	for _, r := range s {
		switch {
		case r == '-' || r == '_':
			upper = b.Len() > 0
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// renamedKey returns the allowed key that key is another casing of
// (jsonpath → jsonPath, node-loss → nodeLoss, csi_calls → csiCalls), or "".
func renamedKey(key string, allowed []string) string {
	for _, a := range allowed {
		if a != key && normalizeWord(a) == normalizeWord(key) {
			return a
		}
	}
	return ""
}
