package invariant

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/trace"
)

func TestIdempotentRetry(t *testing.T) {
	create := func(h *hist, name, vol string) {
		h.call("CreateVolume", trace.CSICall{Name: name, Volume: vol})
	}
	lost := func(h *hist, name, vol string) {
		h.add(trace.Entry{Kind: trace.Fault, Actor: "faultproxy:controller", Verb: "CreateVolume", Object: name,
			Detail: "answer lost", Call: &trace.CSICall{Name: name, Volume: vol, Code: codes.OK}})
	}
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  string // part of the one violation's message; "" for none
	}{
		{"one create", func(h *hist) { create(h, "pvc-1", "v1") }, ""},
		{"lost answer, the retry gets the same volume", func(h *hist) {
			lost(h, "pvc-1", "v1")
			h.callCode("CreateVolume", codes.DeadlineExceeded, trace.CSICall{Name: "pvc-1"})
			create(h, "pvc-1", "v1")
		}, ""},
		{"lost answer, the retry makes another volume", func(h *hist) {
			lost(h, "pvc-1", "v1")
			create(h, "pvc-1", "v2")
		}, "CreateVolume #2 of name pvc-1 was answered with volume v2, but CreateVolume #1 of that name had made volume v1"},
		{"deleted, then made again under the same name", func(h *hist) {
			create(h, "pvc-1", "v1")
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
			create(h, "pvc-1", "v2")
		}, ""},
		{"a failed delete does not count", func(h *hist) {
			create(h, "pvc-1", "v1")
			h.callCode("DeleteVolume", codes.Internal, trace.CSICall{Volume: "v1"})
			create(h, "pvc-1", "v2")
		}, "not idempotent"},
		{"other names are other volumes", func(h *hist) {
			create(h, "pvc-1", "v1")
			create(h, "pvc-2", "v2")
		}, ""},
		{"lost snapshot answer, the retry makes another snapshot", func(h *hist) {
			h.add(trace.Entry{Kind: trace.Fault, Actor: "faultproxy:controller", Verb: "CreateSnapshot", Object: "snapshot-1",
				Detail: "answer lost", Call: &trace.CSICall{Name: "snapshot-1", Snapshot: "s1", Code: codes.OK}})
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s2"})
		}, "CreateSnapshot #2 of name snapshot-1 was answered with snapshot s2, but CreateSnapshot #1 of that name had made snapshot s1"},
		{"snapshot retried, same ID", func(h *hist) {
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
		}, ""},
		{"snapshot deleted, then made again under the same name", func(h *hist) {
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			h.call("DeleteSnapshot", trace.CSICall{Snapshot: "s1"})
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s2"})
		}, ""},
		{"a volume and a snapshot of one name are apart", func(h *hist) {
			create(h, "x", "v1")
			h.call("CreateSnapshot", trace.CSICall{Name: "x", Snapshot: "s1"})
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hist{}
			tc.build(h)
			got := h.check(t, idempotentRetry)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations: %v", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tc.want)):
				t.Errorf("violations: %v, want one containing %q", got, tc.want)
			}
		})
	}
}
