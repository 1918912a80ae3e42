package diff

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/trace"
)

func write(seq int, verb string, obj runtime.Object, removed bool) trace.Entry {
	m, _ := obj.(metav1.Object)
	kind := ""
	switch obj.(type) {
	case *storagev1.VolumeAttachment:
		kind = "VolumeAttachment"
	case *corev1.Event, *eventsv1.Event:
		kind = "Event"
	case *corev1.Pod:
		kind = "Pod"
	}
	return trace.Entry{Seq: seq, Kind: trace.API, Verb: verb,
		Write: &trace.APIWrite{Verb: verb, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, Removed: removed}}
}

// The history has every value an aspect took, also those no end of a step
// saw, and the events of both API groups.
func TestHistory(t *testing.T) {
	va := func(attached bool, rv string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1", ResourceVersion: rv},
			Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "app"}
	entries := []trace.Entry{
		write(1, "create", va(false, "10"), false),
		write(2, "update", va(true, "11"), false),
		write(3, "create", p, false),
		write(4, "create", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: "default"}, Regarding: regarding,
			Reason: "Scheduled", Note: "Successfully assigned default/app to node-1", ReportingController: "default-scheduler"}, false),
		write(5, "create", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.2", Namespace: "default"}, InvolvedObject: regarding,
			Reason: "FailedMount", Message: "m", Count: 1}, false),
		write(6, "update", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.2", Namespace: "default"}, InvolvedObject: regarding,
			Reason: "FailedMount", Message: "m", Count: 2}, false),
		write(7, "delete", p, true),
		{Seq: 8, Kind: trace.CSI, Verb: "NodeStageVolume", Object: "vol-1"},
	}
	h := NewNormaliser().History(entries)
	for _, tc := range []struct {
		object, field string
		want          []string
	}{
		{"VolumeAttachment va-1", "attached", []string{"false", "true"}},
		{"Pod default/app", "", []string{"gone (events only)", "present"}},
		{"Pod default/app", "phase", []string{"Pending"}},
		{"Pod default/app", "event Scheduled", []string{"Successfully assigned default/app to node-1"}},
		{"Pod default/app", "event Scheduled source", []string{"default-scheduler"}},
		{"Pod default/app", "event FailedMount count", []string{"1", "2"}},
	} {
		var got []string
		for v := range h[aspect{tc.object, tc.field}] {
			got = append(got, v)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %q took %q, want %q", tc.object, tc.field, got, tc.want)
		}
	}
	if !h.has(aspect{"Pod default/app", "phase"}, nil) {
		t.Error("an aspect's absence is not among what it took")
	}
}

// A real cluster's timeline learns of writes late: its history up to a
// step's end is cut by resourceVersion, the rest by position.
func TestHistoryUntil(t *testing.T) {
	va := func(rv string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1", ResourceVersion: rv}}
	}
	entries := []trace.Entry{
		write(1, "create", va("10"), false),
		{Seq: 2, Kind: trace.CSI, Verb: "ControllerPublishVolume"},
		{Seq: 3, Kind: trace.Step, Verb: "wait"},
		write(4, "update", va("12"), false), // before the mark's revision, recorded after it
		write(5, "update", va("15"), false),
		{Seq: 6, Kind: trace.CSI, Verb: "NodeStageVolume"},
	}
	seqs := func(es []trace.Entry) []int {
		var out []int
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	if got := seqs(historyUntil(entries, 3, "12")); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("by revision: %v, want [1 2 3 4]", got)
	}
	if got := seqs(historyUntil(entries, 3, "")); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("by position: %v, want [1 2 3]", got)
	}
}
