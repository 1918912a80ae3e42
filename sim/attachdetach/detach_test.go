package attachdetach

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A detach that is not forced reads the Node from the API server: a
// volume its kubelet lists in use there is not detached, whatever the
// controller's informer, which may be behind, says.
func TestDetachVerifiesTheNodeOnTheAPIServer(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	vol := UniqueVolumeName(driver, "vol-1")
	h.add(node("node-a", corev1.ConditionTrue), pvc, pv, volumeAttachment("node-a", true))
	h.c.Restart()
	h.sync("node-a")

	setInUse := func(inUse ...corev1.UniqueVolumeName) {
		t.Helper()
		if _, err := h.client.CoreV1().Nodes().UpdateStatus(context.Background(), node("node-a", corev1.ConditionTrue, inUse...),
			metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setInUse(vol)
	// The informer's view, behind the API server: nothing in use.
	h.c.observeVolumesInUse(node("node-a", corev1.ConditionTrue))
	h.sync("node-a")
	if w := h.writes(); len(w) != 0 {
		t.Fatalf("writes = %v for a volume the Node lists in use", w)
	}
	if a := h.c.actual[AttachmentName("vol-1", driver, "node-a")]; a == nil || !a.mounted || a.detaching {
		t.Fatalf("attachment %+v, want it kept, mounted", a)
	}

	setInUse()
	h.c.observeVolumesInUse(node("node-a", corev1.ConditionTrue))
	h.sync("node-a")
	if w := strings.Join(h.writes(), ", "); w != "delete volumeattachments" {
		t.Fatalf("writes = %q once the Node lists it no more, want the detach", w)
	}
}
