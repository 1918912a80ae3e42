package scenarios

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestYAMLSyntaxErrorLines(t *testing.T) {
	tests := []struct {
		name       string
		src        string
		wantLine   int
		wantWithin int
		wantMsg    string
	}{
		{"unclosed flow mapping", "a: 1\nb: 2\nc: {x: 1\nd: 4\n", 4, 3, "did not find expected ',' or '}'"},
		{"variable braces in flow mapping", "a: 1\nb: 2\nc: {x: ${y}, z: 1}\nd: 4\n", 3, 0, "did not find expected ',' or '}'"},
		{"unclosed flow list", "a: 1\nb: 2\nc: [1, 2\nd: 4\n", 4, 3, "did not find expected ',' or ']'"},
		{"key indented less than its siblings", "a:\n  b: 1\n c: 2\nd: 4\n", 3, 0, "did not find expected key"},
		{"mis-indented key deep in a list", "name: x\nsteps:\n  - wait:\n      object: pvc/a\n      timeout: 3s\n     equals: 3\n", 6, 3, "did not find expected key"},
		{"list item in a mapping", "a: 1\nb: 2\n- c\nd: 4\n", 3, 0, "did not find expected key"},
		{"list item indented wrongly", "a: 1\nsteps:\n  - x: 1\n   - y: 2\n", 4, 3, "did not find expected '-' indicator"},
		{"tab in indentation", "a:\n  b: 1\n\tc: 2\n", 3, 0, "found a tab character that violates indentation"},
		{"colon in a plain value", "a: 1\nb: 2\nc: x: y\nd: 4\n", 3, 0, "mapping values are not allowed in this context"},
		{"unclosed quote", "a: 1\nb: 2\nc: \"abc\nd: 4\n", 3, 0, "found unexpected end of stream"},
		{"key without colon", "a: 1\nb: 2\nc\nd: 4\n", 3, 0, "could not find expected ':'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tt.src), &n)
			if err == nil {
				t.Fatal("no YAML error")
			}
			line, within, msg := yamlSyntaxError([]byte(tt.src), err)
			if line != tt.wantLine || within != tt.wantWithin || msg != tt.wantMsg {
				t.Errorf("got line %d within %d %q; want line %d within %d %q (from %v)", line, within, msg, tt.wantLine, tt.wantWithin, tt.wantMsg, err)
			}
		})
	}
}

func TestWithinHint(t *testing.T) {
	tests := []struct {
		msg    string
		within int
		want   string
	}{
		{"did not find expected key", 0, ""},
		{"did not find expected ',' or '}'", 3, "{...} that starts at line 3"},
		{"did not find expected ',' or ']'", 3, "[...] that starts at line 3"},
		{"did not find expected key", 5, "starts at line 5; check the indentation"},
	}
	for _, tt := range tests {
		got := withinHint(tt.msg, tt.within)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("withinHint(%q, %d) = %q, want it to contain %q", tt.msg, tt.within, got, tt.want)
		}
	}
}
