package kubelet

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

func requeuedAfter(err error) (time.Duration, bool) {
	var again controller.RequeueAfter
	if errors.As(err, &again) {
		return time.Duration(again), true
	}
	return 0, false
}

func TestNextLook(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := podAttachAndMountRetryInterval
	tests := []struct {
		name          string
		now           time.Time
		mountedBefore bool
		want          time.Time
	}{
		{"mounted before the first look", t0, true, t0},
		{"mounted at the first look", t0, false, t0.Add(i)},
		{"mounted between looks", t0.Add(i + time.Millisecond), false, t0.Add(2 * i)},
		{"at a later look, mounted before", t0.Add(3 * i), true, t0.Add(3 * i)},
		{"at a later look, mounted now", t0.Add(3 * i), false, t0.Add(4 * i)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextLook(t0, tc.now, tc.mountedBefore); !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

// mountFailures are the "Unable to attach or mount volumes" events.
func (e *env) mountFailures() []corev1.Event {
	var out []corev1.Event
	for _, ev := range e.events() {
		if ev.Reason == "FailedMount" && strings.HasPrefix(ev.Message, "Unable to attach or mount volumes") {
			out = append(out, ev)
		}
	}
	return out
}

// A pod whose claim the volume manager cannot take in gets the real
// kubelet's FailedMount event a retry interval after each attempt began,
// and its pod worker backs off in between.
func TestUnableToAttachOrMountVolumes(t *testing.T) {
	prefix := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: "
	tests := []struct {
		name   string
		change func(e *env)
		want   string
	}{{
		name: "claim not found",
		change: func(e *env) {
			if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), "data", metav1.DeleteOptions{}); err != nil {
				e.t.Fatal(err)
			}
			e.waitFor("the claim gone", func() bool { _, err := e.k.claims.PersistentVolumeClaims("default").Get("data"); return err != nil })
		},
		want: `error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`,
	}, {
		name: "claim not bound",
		change: func(e *env) {
			e.updateClaim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimPending })
		},
		want: "error processing PVC default/data: PVC is not bound",
	}, {
		name: "claim being deleted without protection",
		change: func(e *env) {
			e.updateClaim(func(c *corev1.PersistentVolumeClaim) { now := metav1.Now(); c.DeletionTimestamp = &now })
		},
		want: "error processing PVC default/data: PVC is being deleted",
	}, {
		name: "PV bound to another claim",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef.UID = "other" })
		},
		want: "error processing PVC default/data: found PV object pv-1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID ",
	}, {
		name: "PV not bound",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef = nil })
		},
		want: "error processing PVC default/data: found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim",
	}, {
		name: "block volume mounted",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { mode := corev1.PersistentVolumeBlock; pv.Spec.VolumeMode = &mode })
		},
		want: "volume data has volumeMode Block, but is specified in volumeMounts",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := statusEnv(t, false, nil)
			tc.change(e)
			start := e.clock.Now()
			err := e.sync("default/app")
			if d, ok := requeuedAfter(err); !ok || d != podAttachAndMountRetryInterval {
				t.Fatalf("first sync: %v, want a requeue after the retry interval", err)
			}
			if got := e.mountFailures(); len(got) != 0 {
				t.Fatalf("an event before the first look: %v", got)
			}
			e.clock.Step(podAttachAndMountRetryInterval)
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d != podWorkerBackOff {
				t.Fatalf("at the first look: requeue %v, want the pod worker's backoff", d)
			}
			got := e.mountFailures()
			if len(got) != 1 || got[0].Message != prefix+tc.want || got[0].Type != corev1.EventTypeWarning {
				t.Fatalf("events %+v, want one %q", got, prefix+tc.want)
			}
			// Backing off: nothing new, however often the pod is synced.
			e.clock.Step(podWorkerBackOff / 2)
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d > podWorkerBackOff/2 {
				t.Fatalf("backing off: requeue %v", d)
			}
			// The next attempt looks a retry interval after it began.
			e.clock.SetTime(start.Add(podAttachAndMountRetryInterval + podWorkerBackOff))
			_ = e.sync("default/app")
			e.clock.Step(podAttachAndMountRetryInterval)
			_ = e.sync("default/app")
			got = e.mountFailures()
			if len(got) != 1 || got[0].Count != 2 {
				t.Fatalf("events %+v, want the one counted twice", got)
			}
			if p := e.apiPod(); p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil {
				t.Errorf("pod status %+v", p.Status)
			}
		})
	}
}

func (e *env) updateClaim(f func(*corev1.PersistentVolumeClaim)) {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(c)
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the claim changed", func() bool {
		got, err := e.k.claims.PersistentVolumeClaims("default").Get("data")
		return err == nil && got.Status.Phase == c.Status.Phase && (got.DeletionTimestamp == nil) == (c.DeletionTimestamp == nil)
	})
}

func (e *env) updatePV(f func(*corev1.PersistentVolume)) {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), testPV, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(pv)
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the PV changed", func() bool {
		got, err := e.k.volumes.Get(testPV)
		return err == nil && reflect.DeepEqual(got.Spec, pv.Spec)
	})
}

// An unused volume is none of the pod's: no event for it.
func TestUnusedVolumeIsNotProcessed(t *testing.T) {
	e := statusEnv(t, false, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts = nil })
	e.updateClaim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimPending })
	_ = e.sync("default/app")
	e.clock.Step(time.Second)
	_ = e.sync("default/app")
	if got := e.mountFailures(); len(got) != 0 {
		t.Errorf("events %v", got)
	}
}

// A pod whose volume takes longer than podAttachAndMountTimeout to be
// attached: the pod worker gives up without an event (v1.37) and starts
// the pod only when its backoff is over, although the volume manager has
// mounted the volume before.
func TestAttachAndMountTimeout(t *testing.T) {
	e := statusEnv(t, true, nil)
	start := e.clock.Now()
	_ = e.sync("default/app")
	e.clock.SetTime(start.Add(podAttachAndMountTimeout + time.Second))
	_ = e.sync("default/app")
	// Attached now, in the pod worker's backoff: mounted, not started.
	node, err := e.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.VolumesAttached = []corev1.AttachedVolume{{Name: attachdetach.UniqueVolumeName(testDriver, testHandle)}}
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the node's volumesAttached", func() bool {
		n, err := e.k.nodes.Get(testNode)
		return err == nil && len(n.Status.VolumesAttached) == 1
	})
	d, ok := requeuedAfter(e.sync("default/app"))
	if want := podWorkerBackOff - time.Second; !ok || d != want {
		t.Fatalf("in the backoff: requeue after %v, want %v", d, want)
	}
	if calls := e.node.lifecycle(); len(calls) != 2 {
		t.Errorf("calls %v: the volume manager mounts meanwhile", calls)
	}
	if p := e.apiPod(); p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase %s in the backoff", p.Status.Phase)
	}
	e.clock.Step(d)
	if err := e.syncAndWait("the pod Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }); err != nil {
		t.Fatal(err)
	}
	if got := e.mountFailures(); len(got) != 0 {
		t.Errorf("events %v: v1.37 records none for a timeout", got)
	}
}

// A restarted kubelet has new pod workers: the wait starts again.
func TestRestartForgetsTheWait(t *testing.T) {
	e := statusEnv(t, true, nil)
	_ = e.syncAndWait("the ContainerCreating status", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 })
	e.clock.Step(podAttachAndMountTimeout + time.Second)
	_ = e.sync("default/app")
	a, _ := e.k.podWorkers.attempts.get(e.pod.UID)
	backingOff := !a.retryAt.IsZero()
	if !backingOff {
		t.Fatal("no backoff after the timeout")
	}
	e.k.podWorkers.reset()
	e.k.statuses.reset()
	e.k.sandboxIPs.reset()
	_ = e.sync("default/app")
	a, _ = e.k.podWorkers.attempts.get(e.pod.UID)
	s := *a
	if !s.retryAt.IsZero() || !s.start.Equal(e.clock.Now()) {
		t.Errorf("after a restart: %+v, want an attempt begun now", s)
	}
	if patches := e.podStatusPatches(); len(patches) != 1 {
		t.Errorf("status patches %q: a restarted kubelet posts the same status again", patches)
	}
}

func TestPodSyncRoll(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cycle := podAttachAndMountTimeout + podWorkerBackOff
	tests := []struct {
		name        string
		s           podSync
		now         time.Time
		wantStart   time.Time
		wantRetryAt time.Time
		wantTimeout bool
	}{
		{"within the first attempt", podSync{start: t0}, t0.Add(time.Minute), t0, time.Time{}, false},
		{"timed out: backing off", podSync{start: t0}, t0.Add(podAttachAndMountTimeout), t0, t0.Add(cycle), true},
		{"the second attempt", podSync{start: t0}, t0.Add(cycle), t0.Add(cycle), time.Time{}, true},
		{"three attempts later", podSync{start: t0}, t0.Add(3*cycle + time.Second), t0.Add(3 * cycle), time.Time{}, true},
		{"after a failed attempt", podSync{start: t0, retryAt: t0.Add(time.Second)}, t0.Add(2 * time.Second),
			t0.Add(time.Second), time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			timedOut := s.roll(tc.now)
			if !s.start.Equal(tc.wantStart) || !s.retryAt.Equal(tc.wantRetryAt) || timedOut != tc.wantTimeout {
				t.Errorf("got start %v retryAt %v timed out %t, want %v, %v and %t", s.start, s.retryAt, timedOut, tc.wantStart, tc.wantRetryAt, tc.wantTimeout)
			}
		})
	}
}
