package invariant

import (
	"strings"
	"testing"

	"github.com/csisim/csisim/trace"
)

func TestDataDurability(t *testing.T) {
	check := func(uid, volume string, wrote bool, found, corrupt []string) trace.DataCheck {
		return trace.DataCheck{PodUID: uid, Namespace: "default", Pod: "app", Claim: "data", Volume: volume, Wrote: wrote, Found: found, Corrupt: corrupt}
	}
	tests := []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"every later pod finds the markers", func(h *hist) {
			h.data(check("a", "pv1", true, nil, nil))
			h.data(check("b", "pv1", true, []string{"a"}, nil))
			h.data(check("c", "pv1", false, []string{"a", "b"}, nil))
		}, ""},
		{"a marker gone", func(h *hist) {
			h.data(check("a", "pv1", true, nil, nil))
			h.data(check("b", "pv1", true, nil, nil))
		}, "the data is gone"},
		{"a marker corrupt", func(h *hist) {
			h.data(check("a", "pv1", true, nil, nil))
			h.data(check("b", "pv1", true, nil, []string{"a"}))
		}, "corrupt"},
		{"a new volume for a claim of the same name", func(h *hist) {
			h.data(check("a", "pv1", true, nil, nil))
			h.data(check("b", "pv2", true, nil, nil))
		}, ""},
		{"a read-only pod wrote nothing to find", func(h *hist) {
			h.data(check("a", "pv1", false, nil, nil))
			h.data(check("b", "pv1", true, nil, nil))
		}, ""},
		{"volumes not checked are not judged", func(h *hist) {
			h.data(check("a", "pv1", true, nil, nil))
			h.data(trace.DataCheck{PodUID: "b", Namespace: "default", Claim: "data", Volume: "pv1", Skipped: "the driver mounts nothing"})
		}, ""},
		{"the volume could not be read", func(h *hist) {
			d := check("a", "pv1", false, nil, nil)
			d.Err = "reading markers: permission denied"
			h.data(d)
		}, "could not check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			got := h.check(t, dataDurability)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("got %+v, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
				t.Fatalf("got %+v, want one saying %q", got, tt.want)
			}
		})
	}
}
