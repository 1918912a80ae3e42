package nemesis

import (
	"fmt"
	"os"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"
)

// inlineIncludes replaces each `- include: file` item of steps (a
// scenario's, whose files are relative to dir) with the steps of that
// file, recursively, so that a reproducer lists every step the scenario
// ran, one node per step. The manifest files of included steps are
// rewritten relative to dir, as if the steps were written there.
func inlineIncludes(steps []*yaml.Node, dir, fileDir string) ([]*yaml.Node, error) {
	var out []*yaml.Node
	for _, node := range steps {
		inc := mappingValue(node, "include")
		if inc == nil || len(node.Content) != 2 {
			if fileDir != dir {
				if err := rebaseManifest(node, fileDir, dir); err != nil {
					return nil, err
				}
			}
			out = append(out, node)
			continue
		}
		path := inc.Value
		if !filepath.IsAbs(path) {
			path = filepath.Join(fileDir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("include %s: %w", inc.Value, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("include %s: %w", inc.Value, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("include %s: not a list of steps", inc.Value)
		}
		inner, err := inlineIncludes(doc.Content[0].Content, dir, filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
	}
	return out, nil
}
