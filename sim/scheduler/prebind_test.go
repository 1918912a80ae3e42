package scheduler

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
)

func claim(name string, ann map[string]string, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
}

func TestPreBindCheck(t *testing.T) {
	selected := map[string]string{storagehelpers.AnnSelectedNode: "node-a"}
	bound := map[string]string{storagehelpers.AnnSelectedNode: "node-a", storagehelpers.AnnBindCompleted: "yes"}
	inZone := func(name, zone string, claimed bool) *corev1.PersistentVolume {
		pv := zoneVolume(zone)
		pv.Name = name
		if claimed {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Name: "s", Namespace: "default", UID: "uid-s"}
		}
		return pv
	}
	static := []staticBinding{{claim: "s", volume: "pv-1"}}
	for _, tc := range []struct {
		name     string
		b        preBinding
		claims   []*corev1.PersistentVolumeClaim
		volumes  []*corev1.PersistentVolume
		wantDone bool
		wantErr  string
	}{
		{name: "provisioning under way", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims: []*corev1.PersistentVolumeClaim{claim("big", selected, "")}},
		{name: "volume set, binding not completed", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims: []*corev1.PersistentVolumeClaim{claim("big", selected, "pv-1")}, volumes: []*corev1.PersistentVolume{inZone("pv-1", "a", false)}},
		{name: "volume set, volume not seen yet", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims: []*corev1.PersistentVolumeClaim{claim("big", bound, "pv-1")}},
		{name: "provisioned and bound", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims: []*corev1.PersistentVolumeClaim{claim("big", bound, "pv-1")}, volumes: []*corev1.PersistentVolume{inZone("pv-1", "a", false)},
			wantDone: true},
		{name: "provisioned in another zone", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims: []*corev1.PersistentVolumeClaim{claim("big", bound, "pv-1")}, volumes: []*corev1.PersistentVolume{inZone("pv-1", "b", false)},
			wantErr: `pv "pv-1" node affinity doesn't match node "node-a": no matching NodeSelectorTerms`},
		{name: "provisioner gave the claim back", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims:  []*corev1.PersistentVolumeClaim{claim("big", map[string]string{"other": "x"}, "")},
			wantErr: `provisioning failed for PVC "big"`},
		{name: "another node selected", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims:  []*corev1.PersistentVolumeClaim{claim("big", map[string]string{storagehelpers.AnnSelectedNode: "node-b"}, "")},
			wantErr: `provisioning failed for PVC "big"`},
		{name: "no annotations at all", b: preBinding{node: "node-a", provision: []string{"big"}},
			claims:  []*corev1.PersistentVolumeClaim{claim("big", nil, "")},
			wantErr: `selectedNode annotation reset for PVC "big"`},
		{name: "claim gone", b: preBinding{node: "node-a", provision: []string{"big"}},
			wantErr: `failed to check provisioning pvc: `},
		{name: "static binding not completed", b: preBinding{node: "node-a", static: static},
			claims: []*corev1.PersistentVolumeClaim{claim("s", nil, "pv-1")}, volumes: []*corev1.PersistentVolume{inZone("pv-1", "a", true)}},
		{name: "static volume lost its claim", b: preBinding{node: "node-a", static: static},
			claims: []*corev1.PersistentVolumeClaim{claim("s", nil, "")}, volumes: []*corev1.PersistentVolume{inZone("pv-1", "a", false)},
			wantErr: `ClaimRef got reset for pv "pv-1"`},
		{name: "static volume gone", b: preBinding{node: "node-a", static: static},
			claims: []*corev1.PersistentVolumeClaim{claim("s", nil, "")}, wantErr: `failed to check binding: `},
		{name: "static and provisioned bound", b: preBinding{node: "node-a", static: static, provision: []string{"big"}},
			claims:   []*corev1.PersistentVolumeClaim{claim("s", map[string]string{storagehelpers.AnnBindCompleted: "yes"}, "pv-1"), claim("big", bound, "pv-2")},
			volumes:  []*corev1.PersistentVolume{inZone("pv-1", "a", true), inZone("pv-2", "a", false)},
			wantDone: true},
		{name: "static bound, provisioning failed", b: preBinding{node: "node-a", static: static, provision: []string{"big"}},
			claims:  []*corev1.PersistentVolumeClaim{claim("s", map[string]string{storagehelpers.AnnBindCompleted: "yes"}, "pv-1"), claim("big", nil, "")},
			volumes: []*corev1.PersistentVolume{inZone("pv-1", "a", true)},
			wantErr: `selectedNode annotation reset for PVC "big"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get := func(name string) (*corev1.PersistentVolumeClaim, error) {
				for _, c := range tc.claims {
					if c.Name == name {
						return c, nil
					}
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
			}
			vol := func(name string) (*corev1.PersistentVolume, error) {
				for _, v := range tc.volumes {
					if v.Name == name {
						return v, nil
					}
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
			}
			done, err := tc.b.check(lookup{claim: get, volume: vol, node: node("node-a", map[string]string{"zone": "a"})})
			if done != tc.wantDone {
				t.Errorf("done = %v, want %v", done, tc.wantDone)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one starting %q", err, tc.wantErr)
			}
		})
	}
}

func TestPreBindErrorIsTheRealOne(t *testing.T) {
	got := preBindError(errors.New(`provisioning failed for PVC "big"`))
	want := `running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "big"`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := preBindError(context.DeadlineExceeded); got != `running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded` {
		t.Errorf("timeout: got %q", got)
	}
}

func TestRetryAt(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name string
		a    attempt
		want time.Time
	}{
		// Seen on the real control plane: a failure 0.77 s into a window
		// is retried 1.23 s later, the next one (2 s) 2.97 s later.
		{name: "first error", a: attempt{errors: 1, last: at(11.77)}, want: at(13)},
		{name: "second error", a: attempt{errors: 2, last: at(13.025)}, want: at(16)},
		{name: "on a window's edge", a: attempt{errors: 1, last: at(10)}, want: at(12)},
		{name: "capped at 10 s", a: attempt{errors: 7, last: at(10.5)}, want: at(21)},
		{name: "many errors", a: attempt{errors: 100, last: at(10.5)}, want: at(21)},
		{name: "errors count over unschedulable attempts", a: attempt{failures: 4, errors: 1, last: at(10.5)}, want: at(12)},
		{name: "unschedulable attempts", a: attempt{failures: 3, last: at(10.5)}, want: at(15)},
	} {
		if got := retryAt(tc.a); !got.Equal(tc.want) {
			t.Errorf("%s: retry at %v, want %v", tc.name, got.Sub(at(0)), tc.want.Sub(at(0)))
		}
	}
}

// preBindWorld is a scheduler on a fake API with a fake clock: one node in
// zone a, a WaitForFirstConsumer class, a claim and a pod using it.
type preBindWorld struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	clock  *testingclock.FakeClock
	events *record.FakeRecorder
	s      *Scheduler
	bound  []string
}

func newPreBindWorld(t *testing.T) *preBindWorld {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := "wffc"
	w := &preBindWorld{t: t, ctx: t.Context(), clock: testingclock.NewFakeClock(time.Unix(1000, 0)), events: record.NewFakeRecorder(100)}
	w.client = fake.NewClientset(
		node("node-a", map[string]string{"zone": "a"}),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "hostpath.csisim.io", VolumeBindingMode: &wffc},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "big"}}}}}},
	)
	w.client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		w.bound = append(w.bound, b.Name+"->"+b.Target.Name)
		return true, b, nil
	})
	factory := informers.NewSharedInformerFactory(w.client, 0)
	rt := controller.Runtime{Clock: w.clock, NewQueue: controller.NewQueue,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return w.events, func() {} }}
	w.s = New(w.client, factory, rt)
	t.Cleanup(w.s.queue.ShutDown)
	factory.Start(w.ctx.Done())
	factory.WaitForCacheSync(w.ctx.Done())
	return w
}

// sync runs the scheduler on the pod and returns how long it asks to wait.
func (w *preBindWorld) sync() time.Duration {
	w.t.Helper()
	err := w.s.sync(w.ctx, "default/app")
	var again controller.RequeueAfter
	if !errors.As(err, &again) {
		w.t.Fatalf("sync: %v, want a requeue", err)
	}
	return time.Duration(again)
}

// setClaim writes the claim and waits for the scheduler's informer to see it.
func (w *preBindWorld) setClaim(edit func(*corev1.PersistentVolumeClaim)) {
	w.t.Helper()
	c, err := w.client.CoreV1().PersistentVolumeClaims("default").Get(w.ctx, "big", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	edit(c)
	if c, err = w.client.CoreV1().PersistentVolumeClaims("default").Update(w.ctx, c, metav1.UpdateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	// The fake API does not count resource versions: wait for the content.
	w.waitClaim(func(seen *corev1.PersistentVolumeClaim) bool {
		return maps.Equal(seen.Annotations, c.Annotations) && seen.Spec.VolumeName == c.Spec.VolumeName
	})
}

func (w *preBindWorld) waitClaim(ok func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	w.t.Helper()
	for range 500 {
		if c, err := w.s.claims.PersistentVolumeClaims("default").Get("big"); err == nil && ok(c) {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatal("the informer never saw the claim as expected")
	return nil
}

func (w *preBindWorld) event() string {
	select {
	case e := <-w.events.Events:
		return e
	default:
		return ""
	}
}

func TestPreBindFailsWhenTheProvisionerGivesTheClaimBack(t *testing.T) {
	w := newPreBindWorld(t)
	if d := w.sync(); d != time.Second {
		t.Fatalf("first poll in %v, want 1s", d)
	}
	w.waitClaim(func(c *corev1.PersistentVolumeClaim) bool {
		return c.Annotations[storagehelpers.AnnSelectedNode] == "node-a"
	})

	// The provisioner fails and removes the selected node; the claim's
	// update wakes the pod half a second in, before the poll.
	w.clock.Step(500 * time.Millisecond)
	w.setClaim(func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, storagehelpers.AnnSelectedNode) })
	if d := w.sync(); d != 500*time.Millisecond {
		t.Fatalf("between polls: wait %v, want 500ms", d)
	}
	if e := w.event(); e != "" {
		t.Fatalf("event before the poll: %q", e)
	}

	// The poll finds out; the pod backs off 1 s, to the window after next.
	w.clock.Step(500 * time.Millisecond)
	if d := w.sync(); d != 2*time.Second {
		t.Errorf("retry in %v, want 2s", d)
	}
	want := `Warning FailedScheduling running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "big"`
	if e := w.event(); e != want {
		t.Errorf("event %q, want %q", e, want)
	}
	pod, err := w.client.CoreV1().Pods("default").Get(w.ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Reason != corev1.PodReasonSchedulerError ||
		pod.Status.Conditions[0].Status != corev1.ConditionFalse || !strings.HasPrefix(want, "Warning FailedScheduling "+pod.Status.Conditions[0].Message) {
		t.Errorf("conditions %+v, want PodScheduled=False (SchedulerError) with the event's message", pod.Status.Conditions)
	}
	if claim, _ := w.s.claims.PersistentVolumeClaims("default").Get("big"); claim.Annotations[storagehelpers.AnnSelectedNode] != "" {
		t.Errorf("the scheduler selected a node again at once: %v", claim.Annotations)
	}

	// After the backoff the pod is scheduled again: the node is selected
	// again; this time the volume is provisioned and bound, and the pod is
	// bound at the next poll.
	w.clock.Step(2 * time.Second)
	if d := w.sync(); d != time.Second {
		t.Fatalf("first poll of the second attempt in %v, want 1s", d)
	}
	w.waitClaim(func(c *corev1.PersistentVolumeClaim) bool {
		return c.Annotations[storagehelpers.AnnSelectedNode] == "node-a"
	})
	pv := zoneVolume("a")
	pv.Name = "pv-1"
	if _, err := w.client.CoreV1().PersistentVolumes().Create(w.ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if _, err := w.s.volumes.Get("pv-1"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.setClaim(func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "pv-1"
		c.Annotations[storagehelpers.AnnBindCompleted] = "yes"
	})
	if len(w.bound) != 0 {
		t.Fatalf("bound before the poll: %v", w.bound)
	}
	w.clock.Step(time.Second)
	if err := w.s.sync(w.ctx, "default/app"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if len(w.bound) != 1 || w.bound[0] != "app->node-a" {
		t.Errorf("bindings %v, want app->node-a", w.bound)
	}
	if e := w.event(); e != "Normal Scheduled Successfully assigned default/app to node-a" {
		t.Errorf("event %q", e)
	}
}

func TestPreBindTimesOut(t *testing.T) {
	w := newPreBindWorld(t)
	w.sync()
	w.waitClaim(func(c *corev1.PersistentVolumeClaim) bool {
		return c.Annotations[storagehelpers.AnnSelectedNode] == "node-a"
	})
	polls := 0
	for w.clock.Since(time.Unix(1000, 0)) < bindTimeout {
		w.clock.Step(w.sync())
		polls++
		if e := w.event(); e != "" {
			t.Fatalf("event after %d polls: %q", polls, e)
		}
	}
	if polls != 600 {
		t.Errorf("%d syncs, want 600", polls)
	}
	w.sync()
	want := `Warning FailedScheduling running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded`
	if e := w.event(); e != want {
		t.Errorf("event %q, want %q", e, want)
	}
}
