package invariant

import (
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/trace"
)

func TestRestoredData(t *testing.T) {
	source := "data"
	snap := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default", UID: "s1"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &source}}}
	restored := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{DataSource: &corev1.TypedLocalObjectReference{Kind: "VolumeSnapshot", Name: "snap"}}}
	check := func(uid, claim string, copied ...string) trace.DataCheck {
		return trace.DataCheck{PodUID: uid, Namespace: "default", Pod: "pod-" + uid, Claim: claim, Volume: "pv-" + claim, Wrote: true, Copied: copied}
	}
	writeSnapshot := func(h *hist) {
		h.add(trace.Entry{Kind: trace.API, Actor: "test", Verb: "create", Object: "VolumeSnapshot default/snap",
			Write: &trace.APIWrite{Verb: "create", Kind: "VolumeSnapshot", Namespace: "default", Name: "snap", Object: snap}})
	}
	createSnapshot := func(h *hist) {
		e := trace.Entry{Kind: trace.CSI, Actor: "csi-snapshotter", Verb: "CreateSnapshot", Object: "snapshot-s1", Call: &trace.CSICall{}}
		h.add(e)
	}
	tests := []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"the restore has what was there before the snapshot", func(h *hist) {
			h.data(check("a", "data"))
			writeSnapshot(h)
			createSnapshot(h)
			h.data(check("b", "data", "")) // written after the snapshot
			h.write(restored, false)
			h.data(check("c", "restored", "a"))
		}, ""},
		{"the restore lost the data", func(h *hist) {
			h.data(check("a", "data"))
			writeSnapshot(h)
			createSnapshot(h)
			h.write(restored, false)
			h.data(check("c", "restored"))
		}, "did not find the marker pod default/pod-a wrote into claim default/data"},
		{"no snapshot recorded: not judged", func(h *hist) {
			h.data(check("a", "data"))
			h.write(restored, false)
			h.data(check("c", "restored"))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			tt.build(&h)
			got := h.check(t, restoredData)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("got %+v, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
				t.Fatalf("got %+v, want one saying %q", got, tt.want)
			}
		})
	}
}
