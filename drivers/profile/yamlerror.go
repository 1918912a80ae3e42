package profile

import (
	"fmt"
	"regexp"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// unknownField is how the strict decoder (sigs.k8s.io/yaml, through
// encoding/json) names a key the profile does not have.
var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeError rewords a decoding error of data for a reader: an unknown
// key is named with its line and its path from the top
// ("line 3: capabilites: unknown key"), without the decoder's JSON
// wrapping, since the profile is YAML. Other errors are returned as they
// are.
func decodeError(data []byte, err error) error {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	var root yaml3.Node
	if yaml3.Unmarshal(data, &root) != nil {
		return err
	}
	line, path := findKey(&root, m[1], "")
	if line == 0 {
		return fmt.Errorf("%s: unknown key (docs/profiles/README.md lists every key)", m[1])
	}
	return fmt.Errorf("line %d: %s: unknown key (docs/profiles/README.md lists every key)", line, path)
}

// findKey finds the first mapping key named key below n, depth first in
// document order: its line and its dotted path.
func findKey(n *yaml3.Node, key, prefix string) (int, string) {
	if n.Kind == yaml3.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			path := strings.TrimPrefix(prefix+"."+k.Value, ".")
			if k.Value == key {
				return k.Line, path
			}
			if line, p := findKey(n.Content[i+1], key, path); line != 0 {
				return line, p
			}
		}
		return 0, ""
	}
	for _, c := range n.Content {
		if line, p := findKey(c, key, prefix); line != 0 {
			return line, p
		}
	}
	return 0, ""
}
