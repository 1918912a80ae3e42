package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// readManifests splits multi-document YAML into objects. file and firstLine
// (the line in file that holds the first line of text; an inline manifest
// starts partway into the scenario file) let every object and every error
// carry its real position.
//
// Each document is converted the way kubectl converts it (sigs.k8s.io/yaml),
// so a manifest that works with kubectl means the same thing here.
func readManifests(text string, file string, firstLine int) ([]Manifest, []*ParseError) {
	var objects []Manifest
	var errs []*ParseError
	for i, doc := range splitDocuments(text) {
		line := firstLine + doc.line - 1
		fail := func(atLine int, format string, args ...any) {
			errs = append(errs, &ParseError{File: file, Line: atLine, Msg: fmt.Sprintf("document %d: ", i+1) + fmt.Sprintf(format, args...)})
		}
		// yaml.v3 reports syntax errors with better lines than the
		// converter below, so it checks the syntax first.
		var syntax yaml3.Node
		if err := yaml3.Unmarshal([]byte(doc.text), &syntax); err != nil {
			at, within, msg := yamlSyntaxError([]byte(doc.text), err)
			if at > 0 {
				line = firstLine + doc.start + at - 1
			}
			if within > 0 {
				within = firstLine + doc.start + within - 1
			}
			fail(line, "invalid YAML: %s%s", msg, withinHint(msg, within))
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc.text))
		if err != nil {
			fail(line, "invalid YAML: %v", err)
			continue
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			fail(line, "invalid YAML: %v", err)
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			fail(line, "not an object: a manifest document is a mapping with apiVersion, kind and metadata")
			continue
		}
		if msg := checkObject(obj); msg != "" {
			fail(line, "%s", msg)
			continue
		}
		objects = append(objects, Manifest{File: file, Line: line, Object: obj, doc: doc.text, lineBase: firstLine + doc.start - 1})
	}
	if len(objects) == 0 && len(errs) == 0 {
		errs = append(errs, &ParseError{File: file, Line: firstLine, Msg: "manifest holds no objects"})
	}
	return objects, errs
}

// checkObject returns what is missing from obj for apply to handle it, or "".
func checkObject(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	switch {
	case apiVersion == "":
		return "apiVersion is missing"
	case kind == "":
		return "kind is missing"
	case strings.HasSuffix(kind, "List") && obj["items"] != nil:
		return fmt.Sprintf("kind %s is not supported: put each object in its own document, separated by ---", kind)
	case name == "" && meta["generateName"] != nil:
		return "metadata.generateName is not supported: apply needs a fixed metadata.name to find the object again"
	case name == "":
		return "metadata.name is missing"
	}
	return ""
}

// document is one YAML document of a multi-document text.
type document struct {
	text  string
	start int // 0-based line of the document's first line in the text
	line  int // 1-based line of its first content line, for messages
}

// splitDocuments cuts text at "---" separator lines, as kubectl does, and
// drops documents that hold only comments and blank lines.
func splitDocuments(text string) []document {
	var docs []document
	lines := strings.Split(text, "\n")
	start := 0
	flush := func(end int) {
		chunk := lines[start:end]
		for i, l := range chunk {
			t := strings.TrimSpace(l)
			if t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, document{text: strings.Join(chunk, "\n"), start: start, line: start + i + 1})
				return
			}
		}
	}
	for i, l := range lines {
		if isDocumentSeparator(l) {
			flush(i)
			start = i + 1
		}
	}
	flush(len(lines))
	return docs
}

func isDocumentSeparator(line string) bool {
	rest, ok := strings.CutPrefix(line, "---")
	if !ok {
		return false
	}
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.HasPrefix(rest, "#")
}

// FieldLine is the line in m.File of the field at path (as
// spec.containers[0].lifecycle) — its key's line — or of the deepest part
// of it the document holds; m.Line when m was not read from YAML.
func (m Manifest) FieldLine(path string) int {
	var root yaml3.Node
	if m.doc == "" || yaml3.Unmarshal([]byte(m.doc), &root) != nil || len(root.Content) == 0 {
		return m.Line
	}
	n := root.Content[0]
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		key, value := mappingEntry(n, name)
		if key == nil {
			break
		}
		n, line = value, key.Line
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			rest = strings.TrimPrefix(after, "[")
			i, err := strconv.Atoi(idx)
			if n.Kind != yaml3.SequenceNode || err != nil || i >= len(n.Content) {
				return m.lineBase + line
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return m.lineBase + line
}

// mappingEntry is the key and value nodes of key in mapping n, or nils.
func mappingEntry(n *yaml3.Node, key string) (*yaml3.Node, *yaml3.Node) {
	if n.Kind != yaml3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
