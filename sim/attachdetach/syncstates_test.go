package attachdetach

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A VolumeAttachment deleted by hand stays in the controller's memory —
// blocking the volume's attach elsewhere (Multi-Attach) — until the
// periodic sync finds it gone; then the pod on the other node gets its
// attachment without the six-minute force detach.
func TestSyncStatesForgetsAttachmentDeletedByHand(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	vol := UniqueVolumeName(driver, "vol-1")
	a := node("node-a", corev1.ConditionUnknown, vol)
	a.Status.VolumesAttached = []corev1.AttachedVolume{{Name: vol}}
	stale := volumeAttachment("node-a", true)
	h.add(a, node("node-b", corev1.ConditionTrue), pvc, pv, stale, pod("app", "node-b"))
	h.sync("node-b")
	if w := h.writes(); slices.Contains(w, "create volumeattachments") {
		t.Fatalf("writes = %v: attached on node-b while the controller holds it attached on node-a", w)
	}

	// A sync while the attachment is there changes nothing.
	h.client.ClearActions()
	h.c.SyncStates(context.Background())
	if _, ok := h.c.actual[stale.Name]; !ok {
		t.Fatal("the sync dropped an attachment that is still attached")
	}

	// Deleted by hand: gone from the API server and the cache.
	if err := h.client.StorageV1().VolumeAttachments().Delete(context.Background(), stale.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.factory.Storage().V1().VolumeAttachments().Informer().GetIndexer().Delete(stale); err != nil {
		t.Fatal(err)
	}
	h.c.detached(stale.Name) // what the informer's delete handler does
	h.sync("node-b")
	if w := h.writes(); slices.Contains(w, "create volumeattachments") {
		t.Fatalf("writes = %v: the running controller noticed the deletion before its sync", w)
	}

	for h.c.queue.Len() > 0 { // what earlier syncs queued
		k, _ := h.c.queue.Get()
		h.c.queue.Done(k)
	}
	h.c.SyncStates(context.Background())
	if _, ok := h.c.actual[stale.Name]; ok {
		t.Fatal("after the sync the deleted attachment is still held attached")
	}
	if n := h.c.queue.Len(); n != 2 {
		t.Fatalf("the sync queued %d nodes, want both: node-a (its status) and node-b (its pod wants the volume)", n)
	}
	h.sync("node-a")
	if w := strings.Join(h.writes(), ", "); w != "patch nodes" {
		t.Errorf("node-a's sync wrote %q, want its volumesAttached emptied (and no detach)", w)
	}
	h.sync("node-b")
	if w := h.writes(); !slices.Contains(w, "create volumeattachments") {
		t.Errorf("node-b's sync wrote %v, want its attachment created", w)
	}
}

// The sync reads the API server when the cache does not have the
// attachment, and takes one that says attached=false as detached.
func TestSyncStatesChecksStatusAttached(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	vol := UniqueVolumeName(driver, "vol-1")
	a := node("node-a", corev1.ConditionTrue, vol)
	a.Status.VolumesAttached = []corev1.AttachedVolume{{Name: vol}}
	va := volumeAttachment("node-a", true)
	h.add(a, pvc, pv, pod("app", "node-a"))
	// In the API server only, not yet in the cache.
	if _, err := h.client.StorageV1().VolumeAttachments().Create(context.Background(), va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.c.SyncStates(context.Background())
	if _, ok := h.c.actual[va.Name]; !ok {
		t.Fatal("an attachment the API server has as attached was dropped")
	}
	va.Status.Attached = false
	if _, err := h.client.StorageV1().VolumeAttachments().Update(context.Background(), va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.c.SyncStates(context.Background())
	if _, ok := h.c.actual[va.Name]; ok {
		t.Fatal("an attachment that says attached=false is still held attached")
	}
}

// An attach operation no external-attacher answers times out after
// AttachTimeout with the CSI plugin's message; the next operation, after
// the backoff, waits again.
func TestAttachTimesOutWithoutExternalAttacher(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	h.add(node("node-b", corev1.ConditionTrue), pvc, pv, pod("app", "node-b"))
	h.sync("node-b")
	if w := h.writes(); !slices.Contains(w, "create volumeattachments") {
		t.Fatalf("writes = %v, want the attachment created", w)
	}
	h.add(volumeAttachment("node-b", false)) // the informer sees it; nobody attaches it
	h.clock.Step(AttachTimeout - time.Millisecond)
	h.sync("node-b")
	if evs := h.events(); len(evs) != 0 {
		t.Fatalf("events before the timeout: %+v", evs)
	}
	h.clock.Step(time.Millisecond)
	h.sync("node-b")
	evs := h.events()
	want := `AttachVolume.Attach failed for volume "pv-1" : timed out waiting for external-attacher of ` + driver + ` CSI driver to attach volume vol-1`
	if len(evs) != 1 || evs[0].Reason != "FailedAttachVolume" || evs[0].Message != want {
		t.Fatalf("events = %+v, want one FailedAttachVolume %q", evs, want)
	}
	// After the 500 ms backoff the next operation waits 2 minutes again.
	h.clock.Step(500 * time.Millisecond)
	h.sync("node-b")
	h.clock.Step(AttachTimeout - time.Millisecond)
	h.sync("node-b")
	if evs := h.events(); evs[0].Count != 1 {
		t.Fatalf("count %d before the second timeout", evs[0].Count)
	}
	h.clock.Step(time.Millisecond)
	h.sync("node-b")
	if evs := h.events(); evs[0].Count != 2 {
		t.Fatalf("count %d, want 2 after the second timeout", evs[0].Count)
	}
}
