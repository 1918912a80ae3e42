package invariant

import (
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/csisim/csisim/trace"
)

func TestNoLeakedVolume(t *testing.T) {
	// lost adds the FAULT entry a proxy writes when it keeps the driver's
	// answer from the caller.
	lost := func(h *hist, verb string, code codes.Code, vol string) {
		h.add(trace.Entry{Kind: trace.Fault, Actor: "faultproxy:controller", Verb: verb, Object: vol,
			Detail: "answer lost", Call: &trace.CSICall{Volume: vol, Name: "pvc-1", Code: code}})
	}
	tests := []struct {
		name  string
		build func(h *hist)
		want  string // what the one violation says, "" for none
	}{
		{"created and deleted", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
		}, ""},
		{"created, its PV kept", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
		}, ""},
		{"created, never deleted, no PV", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
		}, "volume v1 (CreateVolume #1) was never deleted"},
		{"a failed create makes nothing", func(h *hist) {
			h.callCode("CreateVolume", codes.Internal, trace.CSICall{Volume: "v1"})
		}, ""},
		{"a failed delete deletes nothing", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
			h.callCode("DeleteVolume", codes.Internal, trace.CSICall{Volume: "v1"})
		}, "was never deleted"},
		{"answer lost, nobody asked again", func(h *hist) {
			lost(h, "CreateVolume", codes.OK, "v1")
			h.callCode("CreateVolume", codes.DeadlineExceeded, trace.CSICall{Name: "pvc-1"})
		}, "volume v1 (CreateVolume, its answer lost #1) was never deleted"},
		{"answer lost, the retry got it and it was deleted", func(h *hist) {
			lost(h, "CreateVolume", codes.OK, "v1")
			h.callCode("CreateVolume", codes.DeadlineExceeded, trace.CSICall{Name: "pvc-1"})
			h.call("CreateVolume", trace.CSICall{Volume: "v1", Name: "pvc-1"})
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
		}, ""},
		{"the driver failed the lost call", func(h *hist) {
			lost(h, "CreateVolume", codes.Internal, "")
		}, ""},
		{"a lost delete answer still deleted it", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
			lost(h, "DeleteVolume", codes.OK, "v1")
		}, ""},
		{"snapshot made, its content kept", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			h.end.VolumeSnapshotContents = []snapv1.VolumeSnapshotContent{{Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("s1")}}}
		}, ""},
		{"pre-provisioned snapshot content", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			h.end.VolumeSnapshotContents = []snapv1.VolumeSnapshotContent{{Spec: snapv1.VolumeSnapshotContentSpec{Source: snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("s1")}}}}
		}, ""},
		{"snapshot made and deleted", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			h.call("DeleteSnapshot", trace.CSICall{Snapshot: "s1"})
		}, ""},
		{"snapshot answer lost, no content", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.add(trace.Entry{Kind: trace.Fault, Actor: "faultproxy:controller", Verb: "CreateSnapshot", Object: "snapshot-1",
				Detail: "answer lost", Call: &trace.CSICall{Name: "snapshot-1", Snapshot: "s1", Code: codes.OK}})
		}, "snapshot s1 (CreateSnapshot, its answer lost #1) was never deleted, and no VolumeSnapshotContent is left for it"},
		{"snapshot of a Retain content deleted by hand: kept on the storage by design", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			content := &snapv1.VolumeSnapshotContent{Spec: snapv1.VolumeSnapshotContentSpec{DeletionPolicy: snapv1.VolumeSnapshotContentRetain},
				Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("s1")}}
			h.add(trace.Entry{Kind: trace.API, Verb: "delete", Write: &trace.APIWrite{Kind: "VolumeSnapshotContent", Object: content, Removed: true}})
		}, ""},
		{"snapshot of a Delete content gone without DeleteSnapshot", func(h *hist) {
			h.end.SnapshotsKnown = true
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
			content := &snapv1.VolumeSnapshotContent{Spec: snapv1.VolumeSnapshotContentSpec{DeletionPolicy: snapv1.VolumeSnapshotContentDelete},
				Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("s1")}}
			h.add(trace.Entry{Kind: trace.API, Verb: "delete", Write: &trace.APIWrite{Kind: "VolumeSnapshotContent", Object: content, Removed: true}})
		}, "snapshot s1 (CreateSnapshot #1) was never deleted"},
		{"snapshots not known: not judged", func(h *hist) {
			h.call("CreateSnapshot", trace.CSICall{Name: "snapshot-1", Snapshot: "s1"})
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hist{end: EndState{Observed: true, Nodes: []corev1.Node{*node("node-1", true)}}}
			tt.build(&h)
			got := h.check(t, noLeakedVolume)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("got %+v, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
				t.Fatalf("got %+v, want one saying %q", got, tt.want)
			}
		})
	}
}

func TestNoLeakedVolumeNeedsTheEndState(t *testing.T) {
	var h hist // End.Observed false: the backend could not read it
	h.call("CreateVolume", trace.CSICall{Volume: "v1"})
	expectViolations(t, h.check(t, noLeakedVolume), 0)
}
