package text

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"abc", "", 3},
		{"", "ab", 2},
		{"abc", "abd", 1},
		{"abc", "xyz", 3},
		{"wiat", "wait", 1},
		{"hostpath.csisim.oi", "hostpath.csisim.io", 1},
		{"kitten", "sitting", 3},
		// Optimal string alignment: a swapped pair is not edited again.
		{"ca", "abc", 3},
	} {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := EditDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (not symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	doc := "head\n<!-- b -->\nold\n<!-- e -->\ntail\n"
	got, err := ReplaceSection(doc, "<!-- b -->", "<!-- e -->", "new\n")
	if want := "head\n<!-- b -->\nnew\n<!-- e -->\ntail\n"; err != nil || got != want {
		t.Errorf("ReplaceSection = %q, %v; want %q", got, err, want)
	}
	if _, err := ReplaceSection("no markers\n", "<!-- b -->", "<!-- e -->", "x\n"); err == nil {
		t.Error("a document without the markers was not refused")
	}
}
