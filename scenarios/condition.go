package scenarios

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"
)

// verdict is the result of evaluating a check once.
type verdict struct {
	held bool
	// seen describes what was found, on one line, for "last seen:".
	seen string
	// explain optionally adds lines to a failure message (a call table).
	explain string
}

// Placeholders for what a check saw when there is no value to show.
const (
	seenNotFound = "<not found>"
	seenEmpty    = "<empty>"
)

// compileJSONPath parses a kubectl-style jsonpath template. Missing fields
// give empty output rather than an error, because a wait typically starts
// before the field is set. Braces are optional: ".status.phase" means
// "{.status.phase}".
func compileJSONPath(expr string) (*jsonpath.JSONPath, error) {
	if !strings.Contains(expr, "{") {
		expr = "{" + expr + "}"
	}
	jp := jsonpath.New("jsonpath").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return nil, err
	}
	return jp, nil
}

// evalJSONPath prints the result of expr on data, the way kubectl -o
// jsonpath does.
func evalJSONPath(expr string, data map[string]any) (string, error) {
	jp, err := compileJSONPath(expr)
	if err != nil {
		return "", fmt.Errorf("invalid jsonpath %q: %w", expr, err)
	}
	var out bytes.Buffer
	if err := jp.Execute(&out, data); err != nil {
		return "", fmt.Errorf("jsonpath %q: %w", expr, err)
	}
	return out.String(), nil
}

// evaluate says whether an object check holds. obj is the named object, or
// for a kind without a name the list with its items; nil means the named
// object does not exist.
func (c *Check) evaluate(obj map[string]any) verdict {
	if c.Gone {
		if obj == nil {
			return verdict{held: true, seen: seenNotFound}
		}
		return verdict{seen: describeExisting(obj)}
	}
	if obj == nil {
		return verdict{seen: seenNotFound}
	}
	if c.Count != nil {
		items, _ := obj["items"].([]any)
		if len(items) != *c.Count {
			return verdict{seen: describeItems(items)}
		}
		if c.JSONPath == "" {
			return verdict{held: true, seen: describeItems(items)}
		}
	}
	if c.Match != nil {
		if m := matchObject(c.Match, obj); m != nil {
			return verdict{seen: m.String()}
		}
		return verdict{held: true, seen: "matches"}
	}
	if c.JSONPath == "" {
		return verdict{held: true, seen: "exists"}
	}
	out, err := evalJSONPath(c.JSONPath, obj)
	if err != nil {
		return verdict{seen: err.Error()}
	}
	seen := out
	if seen == "" {
		seen = seenEmpty
	}
	if c.Equals != nil {
		return verdict{held: out == *c.Equals, seen: seen}
	}
	if c.StartsWith != nil {
		return verdict{held: strings.HasPrefix(out, *c.StartsWith), seen: seen}
	}
	return verdict{held: strings.TrimSpace(out) != "", seen: seen}
}

// expectation says what the check waits for, for messages:
// "pod/app {.status.phase} == Running", "pvc/data to be gone".
func (c *Check) expectation() string {
	if c.CSICalls != nil {
		return c.CSICalls.expectation()
	}
	if c.Log != "" {
		what := fmt.Sprintf("the log of container %s of %s", c.Log, c.Object)
		switch {
		case c.JSONPath != "" && c.Equals != nil:
			return fmt.Sprintf("%s %s == %s", what, c.JSONPath, quoteIfBlank(*c.Equals))
		case c.JSONPath != "" && c.StartsWith != nil:
			return fmt.Sprintf("%s %s to start with %s", what, c.JSONPath, *c.StartsWith)
		case c.JSONPath != "":
			return fmt.Sprintf("%s %s to be non-empty", what, c.JSONPath)
		}
		return what + " to be non-empty"
	}
	var parts []string
	if c.Count != nil {
		what := c.Object.Kind
		if c.LabelSelector != "" {
			what += " with labels " + c.LabelSelector
		}
		parts = append(parts, fmt.Sprintf("%d %s", *c.Count, what))
	}
	switch {
	case c.Gone:
		parts = append(parts, c.Object.String()+" to be gone")
	case c.JSONPath != "" && c.Equals != nil:
		parts = append(parts, fmt.Sprintf("%s %s == %s", c.Object, c.JSONPath, quoteIfBlank(*c.Equals)))
	case c.JSONPath != "" && c.StartsWith != nil:
		parts = append(parts, fmt.Sprintf("%s %s to start with %s", c.Object, c.JSONPath, *c.StartsWith))
	case c.JSONPath != "":
		parts = append(parts, fmt.Sprintf("%s %s to be non-empty", c.Object, c.JSONPath))
	case c.Match != nil:
		parts = append(parts, fmt.Sprintf("%s to match %s", c.Object, describeMatch(c.Match)))
	case c.Count == nil:
		parts = append(parts, c.Object.String()+" to exist")
	}
	return strings.Join(parts, " and ")
}

// quoteIfBlank shows an expected value as written, but makes "" and values
// with surrounding spaces visible.
func quoteIfBlank(s string) string {
	if s == "" || strings.TrimSpace(s) != s {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// describeExisting says why an object that should be gone is still there:
// a deletion blocked by finalizers is the usual story in storage.
func describeExisting(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	deleting, _ := meta["deletionTimestamp"].(string)
	finalizers, _ := meta["finalizers"].([]any)
	if deleting == "" {
		return "exists"
	}
	names := make([]string, 0, len(finalizers))
	for _, f := range finalizers {
		names = append(names, fmt.Sprint(f))
	}
	if len(names) == 0 {
		return "exists, being deleted since " + deleting
	}
	return fmt.Sprintf("exists, being deleted since %s, held by finalizers %s", deleting, strings.Join(names, ", "))
}

// describeItems summarises a list: "2 items: pvc-1, pvc-2".
func describeItems(items []any) string {
	const shown = 5
	var names []string
	for i, it := range items {
		if i == shown {
			names = append(names, fmt.Sprintf("+%d more", len(items)-shown))
			break
		}
		obj, _ := it.(map[string]any)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if ns, _ := meta["namespace"].(string); ns != "" {
			name = ns + "/" + name
		}
		names = append(names, name)
	}
	switch len(items) {
	case 0:
		return "0 items"
	case 1:
		return "1 item: " + names[0]
	}
	return fmt.Sprintf("%d items: %s", len(items), strings.Join(names, ", "))
}

// formatDuration prints whole seconds as "60s" rather than Go's "1m0s",
// which reads oddly in "timed out after 1m0s", and rounds to milliseconds.
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Millisecond:
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}
