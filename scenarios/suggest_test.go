package scenarios

import "testing"

func TestSuggest(t *testing.T) {
	fields := []string{"object", "namespace", "labelSelector", "jsonpath", "equals", "gone", "count", "save", "csiCalls", "timeout"}
	tests := []struct{ word, want string }{
		{"equal", "equals"},
		{"Equals", "equals"},
		{"jsonPath", "jsonpath"},
		{"json_path", "jsonpath"},
		{"label_selector", "labelSelector"},
		{"timout", "timeout"},
		{"nmaespace", "namespace"},
		{"csicall", "csiCalls"},
		{"wiat", ""}, // not a field of this set
		{"banana", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, fields); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := suggest("wiat", actionKeys); got != "wait" {
		t.Errorf("suggest(wiat) = %q, want wait", got)
	}
}
