package attachdetach

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/timing"
)

const driver = "hostpath.csisim.io"

// harness runs the controller's sync by hand on a fake clientset whose
// informer caches the test fills itself.
type harness struct {
	t       *testing.T
	c       *Controller
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	clock   *testingclock.FakeClock
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue, NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(cs kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(cs, component, host, clk, nil, nil), func() {}
		}}
	return &harness{t: t, c: New(client, factory, rt), client: client, factory: factory, clock: clk}
}

// add puts objects in the informer caches (and the API server, for the
// controller's writes to find them).
func (h *harness) add(objs ...runtime.Object) {
	h.t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			err = h.factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
			_, _ = h.client.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Pod:
			err = h.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = h.factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolume:
			err = h.factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.VolumeAttachment:
			err = h.factory.Storage().V1().VolumeAttachments().Informer().GetIndexer().Add(o)
			_, _ = h.client.StorageV1().VolumeAttachments().Create(context.Background(), o, metav1.CreateOptions{})
		default:
			h.t.Fatalf("cannot add %T", o)
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) sync(node string) {
	h.t.Helper()
	h.client.ClearActions()
	if err := h.c.syncNode(context.Background(), node); err != nil {
		h.t.Fatalf("sync %s: %v", node, err)
	}
}

// writes lists the verbs and resources the last sync wrote.
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func (h *harness) events() []corev1.Event {
	h.t.Helper()
	list, err := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func node(name string, ready corev1.ConditionStatus, inUse ...corev1.UniqueVolumeName) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnControllerManagedAttachDetach: "true"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
			VolumesInUse: inUse},
	}
}

func volume() (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-1"}}}}
	return pvc, pv
}

func pod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: nodeName, Volumes: []corev1.Volume{{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
}

func volumeAttachment(nodeName string, attached bool) *storagev1.VolumeAttachment {
	pv := "pv-1"
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("vol-1", driver, nodeName)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
}

func TestRunningControllerLeavesUnknownAttachmentUntilRestart(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	h.add(node("node-a", corev1.ConditionTrue), pvc, pv)
	h.sync("node-a") // the controller has started and built its state

	h.add(volumeAttachment("node-a", true)) // made by someone else
	h.sync("node-a")
	if w := h.writes(); len(w) != 0 {
		t.Fatalf("the running controller wrote %v for an attachment it does not know", w)
	}

	// A restarted controller takes what it finds as mounted until the
	// node's next update says what its kubelet uses.
	h.c.Restart()
	h.sync("node-a")
	if w := h.writes(); len(w) != 0 {
		t.Fatalf("after a restart, before the node's next update, writes = %v; want none", w)
	}
	h.c.observeVolumesInUse(node("node-a", corev1.ConditionTrue)) // the kubelet's status report: nothing in use
	h.sync("node-a")
	if w := strings.Join(h.writes(), ", "); w != "delete volumeattachments" {
		t.Fatalf("after the node's update, writes = %q, want the unwanted attachment deleted", w)
	}
}

func TestRestartWaitsSixMinutesForAGoneNode(t *testing.T) {
	for _, tc := range []struct {
		timing timing.Timing
		wait   time.Duration
	}{
		{timing.Timing{}, MaxWaitForUnmountDuration},
		// A scenario's cluster.timing: {speedup: 10}.
		{timing.Timing{Speedup: 10}, 36 * time.Second},
	} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			h := newHarness(t)
			h.c.SetTiming(tc.timing)
			pvc, pv := volume()
			h.add(pvc, pv, volumeAttachment("node-gone", true))
			h.sync("node-gone")
			if w := h.writes(); len(w) != 0 {
				t.Fatalf("writes = %v; a node that cannot say it unmounted must be waited for", w)
			}
			h.clock.Step(tc.wait - time.Second)
			h.sync("node-gone")
			if w := h.writes(); len(w) != 0 {
				t.Fatalf("writes = %v before maxWaitForUnmountDuration (%s)", w, tc.wait)
			}
			h.clock.Step(time.Second)
			h.sync("node-gone")
			if w := strings.Join(h.writes(), ", "); w != "delete volumeattachments" {
				t.Fatalf("writes = %q after %s, want the force detach", w, tc.wait)
			}
		})
	}
}

func TestMultiAttachIsReportedOnce(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	a := node("node-a", corev1.ConditionUnknown, UniqueVolumeName(driver, "vol-1"))
	a.Status.VolumesAttached = []corev1.AttachedVolume{{Name: UniqueVolumeName(driver, "vol-1")}}
	h.add(a, node("node-b", corev1.ConditionTrue), pvc, pv, volumeAttachment("node-a", true), pod("app", "node-b"))
	h.sync("node-b")
	h.sync("node-b")
	evs := h.events()
	if len(evs) != 1 || evs[0].Count != 1 || evs[0].Reason != "FailedAttachVolume" {
		t.Fatalf("events = %+v, want one FailedAttachVolume reported once", evs)
	}
	want := `Waiting for detach for volume "pv-1" Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node`
	if evs[0].Message != want {
		t.Errorf("message %q, want %q", evs[0].Message, want)
	}
	for _, w := range h.writes() {
		if w == "create volumeattachments" {
			t.Errorf("attached elsewhere, yet it created an attachment")
		}
	}
}

func TestAttachErrorIsRetriedWithBackoff(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	va := volumeAttachment("node-b", false)
	va.Status.AttachError = &storagev1.VolumeError{Message: "rpc error: code = Internal desc = boom"}
	h.add(node("node-b", corev1.ConditionTrue), pvc, pv, va, pod("app", "node-b"))
	count := func() int32 {
		evs := h.events()
		if len(evs) != 1 {
			t.Fatalf("events = %+v, want one", evs)
		}
		if want := `AttachVolume.Attach failed for volume "pv-1" : rpc error: code = Internal desc = boom`; evs[0].Message != want {
			t.Fatalf("message %q, want %q", evs[0].Message, want)
		}
		return evs[0].Count
	}
	h.sync("node-b")
	if n := count(); n != 1 {
		t.Fatalf("count %d after the first attempt", n)
	}
	h.sync("node-b")
	if n := count(); n != 1 {
		t.Fatalf("count %d: retried within the 500 ms backoff", n)
	}
	h.clock.Step(500 * time.Millisecond)
	h.sync("node-b")
	h.clock.Step(999 * time.Millisecond)
	h.sync("node-b")
	if n := count(); n != 2 {
		t.Fatalf("count %d, want 2: one retry after 500 ms, none before the next 1 s", n)
	}
	h.clock.Step(time.Millisecond)
	h.sync("node-b")
	if n := count(); n != 3 {
		t.Fatalf("count %d, want 3 after the 1 s backoff", n)
	}
}

func TestTerminatedPods(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	done := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}}}, false},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true},
		{"deleting, still running (a lost node)", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running, done}}}, false},
		{"deleting, containers stopped", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{done}}}, true},
	} {
		if got := terminated(&tc.pod); got != tc.want {
			t.Errorf("%s: terminated = %v, want %v", tc.name, got, tc.want)
		}
	}
}
