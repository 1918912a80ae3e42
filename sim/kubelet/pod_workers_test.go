package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/attachdetach"
)

// markDeleted deletes the pod gracefully, as the API server does: a
// deletion timestamp and a new generation, the pod still there.
func (e *env) markDeleted() {
	e.t.Helper()
	p := e.apiPod()
	now := metav1.NewTime(e.clock.Now())
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptr(int64(30))
	p.Generation++
	if _, err := e.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the informer to see the deletion", func() bool {
		p, err := e.k.pods.Pods("default").Get("app")
		return err == nil && p.DeletionTimestamp != nil
	})
}

// waitForPhase waits for the informer to see the pod in phase.
func (e *env) waitForPhase(phase corev1.PodPhase) {
	e.t.Helper()
	e.waitFor("the pod "+string(phase), func() bool {
		p, err := e.k.pods.Pods("default").Get("app")
		return err == nil && p.Status.Phase == phase
	})
}

// A running pod being deleted is Succeeded, its container terminated
// (Completed) and its sandbox stopped, before any of its volumes is
// touched. With NodeUnpublishVolume failing it stays so, tried again only
// after the unmount's backoff, its volume still in use. Once unpublished,
// the pod goes from the API while its volume is still staged: the
// unstaging is the reconciler's, in a sync of its own.
func TestTerminationBeforeTeardown(t *testing.T) {
	e := statusEnv(t, false, nil)
	e.syncUntilRunning()
	running := e.apiPod().Status
	calls := len(e.node.lifecycle())
	e.node.unpubErr = status.Error(codes.Internal, "directory not empty")
	e.markDeleted()

	if err := e.sync("default/app"); err != nil {
		t.Fatalf("terminating sync: %v", err)
	}
	if got := e.node.lifecycle()[calls:]; len(got) != 0 {
		t.Fatalf("CSI calls while the containers stop: %v", got)
	}
	got := e.apiPod().Status
	now := metav1.NewTime(e.clock.Now()).Rfc3339Copy()
	cs := got.ContainerStatuses[0]
	term := cs.State.Terminated
	if got.Phase != corev1.PodSucceeded || got.ObservedGeneration != 2 || got.PodIP != running.PodIP || term == nil ||
		term.ExitCode != 0 || term.Reason != "Completed" || !term.StartedAt.Equal(&running.ContainerStatuses[0].State.Running.StartedAt) ||
		!term.FinishedAt.Equal(&now) || term.ContainerID != cs.ContainerID || cs.Ready || cs.Started == nil || *cs.Started {
		t.Errorf("status phase %s generation %d podIP %q container %+v", got.Phase, got.ObservedGeneration, got.PodIP, cs)
	}
	type cond struct {
		status          corev1.ConditionStatus
		reason, message string
	}
	want := map[corev1.PodConditionType]cond{
		corev1.PodReadyToStartContainers: {corev1.ConditionFalse, "PodSandboxNotReady", "pod sandbox is not ready"},
		corev1.PodInitialized:            {corev1.ConditionTrue, "PodCompleted", ""},
		corev1.PodReady:                  {corev1.ConditionFalse, "PodCompleted", ""},
		corev1.ContainersReady:           {corev1.ConditionFalse, "PodCompleted", ""},
		corev1.PodScheduled:              {corev1.ConditionTrue, "", ""},
	}
	for _, c := range got.Conditions {
		if w := want[c.Type]; (cond{c.Status, c.Reason, c.Message}) != w || c.ObservedGeneration != 2 {
			t.Errorf("condition %+v, want %+v", c, w)
		}
	}
	if patches := e.podStatusPatches(); len(patches) != 4 {
		t.Errorf("status patches %q, want ContainerCreating, Running, Running for the deletion's generation, Succeeded", patches)
	}
	var killing []string
	for _, ev := range e.events() {
		if ev.Reason == "Killing" {
			killing = append(killing, ev.InvolvedObject.FieldPath+": "+ev.Message)
		}
	}
	if !slices.Equal(killing, []string{"spec.containers{app}: Stopping container app"}) {
		t.Errorf("Killing events %q", killing)
	}
	unique := attachdetach.UniqueVolumeName(testDriver, testHandle)
	if e.k.desired.volumes()[unique] || !slices.Contains(e.k.volumesInUse(), unique) {
		t.Errorf("desired %v, volumesInUse %v: want the volume no longer wanted, but in use", e.k.desired.volumes(), e.k.volumesInUse())
	}

	// Terminated: the unpublish fails, and is tried again after its backoff only.
	e.waitForPhase(corev1.PodSucceeded)
	var waits []time.Duration
	for range 2 {
		d, ok := requeuedAfter(e.sync("default/app"))
		if !ok {
			t.Fatal("a failed unpublish is not retried after a backoff")
		}
		if _, again := requeuedAfter(e.sync("default/app")); !again || len(e.node.unpub) != len(waits)+1 {
			t.Fatalf("woken early: %d unpublishes", len(e.node.unpub))
		}
		waits = append(waits, d)
		e.clock.Step(d)
	}
	if !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Errorf("unmount backoff %v", waits)
	}
	if e.apiPod().Status.Phase != corev1.PodSucceeded || !slices.Contains(e.k.volumesInUse(), unique) {
		t.Error("the pod or its volume's use went while the volume is published")
	}

	e.node.unpubErr = nil
	if err := e.sync("default/app"); err != nil {
		t.Fatalf("terminated sync: %v", err)
	}
	if _, err := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after its volumes were unpublished: %v, want it deleted", err)
	}
	if got := e.node.lifecycle(); got[len(got)-1] != "NodeUnpublishVolume" || !slices.Contains(e.k.volumesInUse(), unique) {
		t.Fatalf("calls %v, volumesInUse %v: want the volume staged and in use still", got, e.k.volumesInUse())
	}
	if devices := e.syncDevices(); !slices.Equal(devices, []string{deviceKeyPrefix + string(unique)}) {
		t.Errorf("unstagings queued: %v", devices)
	}
	if got := e.node.lifecycle(); got[len(got)-1] != "NodeUnstageVolume" || len(e.k.volumesInUse()) != 0 {
		t.Errorf("calls %v, volumesInUse %v after the unstaging", got, e.k.volumesInUse())
	}
}

// A pod deleted before it started has no containers to stop: its status
// is posted for the deletion's generation, and once its volumes are torn
// down the status manager's TerminatePod makes it Failed, its container
// one that could not be located, before it deletes it.
func TestPodDeletedBeforeItStarted(t *testing.T) {
	e := statusEnv(t, true, nil)
	if _, ok := requeuedAfter(e.sync("default/app")); !ok {
		t.Fatal("a pod whose volume is not attached started")
	}
	e.markDeleted()
	if err := e.sync("default/app"); err != nil {
		t.Fatalf("terminating sync: %v", err)
	}
	if got := e.apiPod().Status; got.Phase != corev1.PodPending || got.ObservedGeneration != 2 {
		t.Errorf("phase %s, generation %d: want Pending for the deletion's generation", got.Phase, got.ObservedGeneration)
	}
	if err := e.sync("default/app"); err != nil {
		t.Fatalf("terminated sync: %v", err)
	}
	final, _ := e.k.statuses.get("uid-1")
	term := final.ContainerStatuses[0].State.Terminated
	if final.Phase != corev1.PodFailed || term == nil || term.ExitCode != 137 || term.Reason != "ContainerStatusUnknown" ||
		term.Message != "The container could not be located when the pod was terminated" {
		t.Errorf("final status phase %s, container %+v", final.Phase, final.ContainerStatuses[0].State)
	}
	if _, err := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %v, want it deleted", err)
	}
	for _, ev := range e.events() {
		if ev.Reason == "Killing" {
			t.Errorf("Killing event for a pod that never ran: %s", ev.Message)
		}
	}
}

// heldNode is a node plugin whose NodeUnstageVolume waits until released.
type heldNode struct {
	*fakeNode
	started, release chan struct{}
}

func (h heldNode) NodeUnstageVolume(ctx context.Context, r *csi.NodeUnstageVolumeRequest, opts ...grpc.CallOption) (*csi.NodeUnstageVolumeResponse, error) {
	h.started <- struct{}{}
	<-h.release
	return h.fakeNode.NodeUnstageVolume(ctx, r, opts...)
}

// A pod that comes for a volume while its device is being unstaged waits
// for the unstaging, without a CSI call, and then stages it again.
func TestNewPodWaitsForUnstaging(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	held := heldNode{fakeNode: e.node, started: make(chan struct{}), release: make(chan struct{})}
	e.k.plugins[0].csi = held
	e.deletePodKeepDevices()
	unique := attachdetach.UniqueVolumeName(testDriver, testHandle)
	done := make(chan error)
	go func() { done <- e.sync(deviceKeyPrefix + string(unique)) }()
	<-held.started

	second := e.pod.DeepCopy()
	second.Name, second.UID, second.ResourceVersion = "second", "uid-2", ""
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the second pod in the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("second")
		return err == nil
	})
	calls := len(e.node.lifecycle())
	if _, ok := requeuedAfter(e.sync("default/second")); !ok || len(e.node.lifecycle()) != calls {
		t.Fatalf("the second pod did not wait for the unstaging: calls %v", e.node.lifecycle()[calls:])
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The volume left the desired state with the first pod and came back
	// with the second: it is mounted once a node status reported it.
	e.reportStatus()
	if d, ok := requeuedAfter(e.sync("default/second")); ok {
		e.clock.Step(d)
		_ = e.sync("default/second")
	}
	want := []string{"NodeUnstageVolume", "NodeStageVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got[calls:], want) {
		t.Errorf("calls %v, want the unstaging, then %v", got, want[1:])
	}
}

// The real kubelet syncs a pod again when its containers' start is seen
// (PLEG's next relist): for a driver that requires republishing, that sync
// publishes the volume again, a relist period after the start; the sync
// that started the containers asks for it. Without requiresRepublish no
// sync is asked for.
func TestContainerStartSyncRepublishes(t *testing.T) {
	for _, republish := range []bool{true, false} {
		e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{RequiresRepublish: ptr(republish)}})
		e.runningPod()
		started := e.clock.Now()
		d, due := requeuedAfter(e.sync("default/app"))
		if due != republish || (republish && d != plegRelistPeriod) {
			t.Fatalf("requiresRepublish %v: the sync after the start asks for another in %v (%v)", republish, d, due)
		}
		if !republish {
			continue
		}
		e.clock.Step(d)
		if err := e.sync("default/app"); err != nil {
			t.Fatal(err)
		}
		if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume"}) ||
			e.clock.Now().Sub(started) != plegRelistPeriod {
			t.Errorf("calls %v at +%v", got, e.clock.Now().Sub(started))
		}
		if err := e.sync("default/app"); err != nil || len(e.node.pub) != 2 {
			t.Errorf("a sync after it: %v, %d publishes", err, len(e.node.pub))
		}
	}
}
