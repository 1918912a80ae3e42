package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fakekube"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// wiredLoop is a loop fed by its API server's writes, as in a cluster.
func wiredLoop(t *testing.T) (*Loop, kubernetes.Interface) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var l *Loop
	api := fakekube.New(fakekube.Options{Clock: clk, OnWrite: func(w fakekube.Write) {
		if l != nil {
			l.Observe(w)
		}
	}})
	l = New(api, clk, 1)
	cs, err := kubernetes.NewForConfig(api.RESTConfig("test"))
	if err != nil {
		t.Fatal(err)
	}
	return l, cs
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
}

// heard records what an informer's handler is told, one line an event.
type heard struct{ events []string }

func (h *heard) OnAdd(obj any, _ bool) { h.add("add", obj) }
func (h *heard) OnUpdate(old, obj any) {
	if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
		h.events = append(h.events, "resync "+obj.(*corev1.ConfigMap).Name)
		return
	}
	h.add("update", obj)
}
func (h *heard) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		h.events = append(h.events, "tombstone "+tomb.Key+" last seen as "+tomb.Obj.(*corev1.ConfigMap).Name)
		return
	}
	h.add("delete", obj)
}
func (h *heard) add(what string, obj any) {
	h.events = append(h.events, what+" "+obj.(*corev1.ConfigMap).Name)
}
func (h *heard) take() []string {
	out := h.events
	h.events = nil
	return out
}

func TestDropWatchEventsThenRelist(t *testing.T) {
	ctx := context.Background()
	l, cs := wiredLoop(t)
	cms := cs.CoreV1().ConfigMaps("default")
	for _, n := range []string{"x", "y", "z"} {
		if _, err := cms.Create(ctx, configMap(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deaf, err := l.NewInformer(configMaps, "")
	if err != nil {
		t.Fatal(err)
	}
	deaf.BelongsTo("attachdetach-controller")
	other, err := l.NewInformer(configMaps, "")
	if err != nil {
		t.Fatal(err)
	}
	other.BelongsTo("persistentvolume-binder")
	var deafHeard, otherHeard heard
	_, _ = deaf.AddEventHandler(&deafHeard)
	_, _ = other.AddEventHandler(&otherHeard)
	deafHeard.take()
	otherHeard.take()

	var relists []Relist
	if err := l.DropWatchEvents("attachdetach-controller", "configmaps", 2, func(r Relist) { relists = append(relists, r) }); err != nil {
		t.Fatal(err)
	}
	start := l.Clock().Now()
	cx, _ := cms.Get(ctx, "x", metav1.GetOptions{})
	cx.Labels = map[string]string{"changed": "yes"}
	if _, err := cms.Update(ctx, cx, metav1.UpdateOptions{}); err != nil { // lost
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "y", metav1.DeleteOptions{}); err != nil { // lost: the watch ends
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, configMap("w"), metav1.CreateOptions{}); err != nil { // before the list: lost
		t.Fatal(err)
	}
	if err := l.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deafHeard.take(); len(got) != 0 {
		t.Errorf("the informer with the broken watch heard %v, want nothing", got)
	}
	if got, want := otherHeard.take(), []string{"update x", "delete y", "add w"}; !slices.Equal(got, want) {
		t.Errorf("another component's informer heard %v, want %v", got, want)
	}
	if _, ok, _ := deaf.GetStore().GetByKey("default/y"); !ok {
		t.Errorf("the deaf informer's cache lost y, which it never heard go")
	}

	// The reflector lists after its first backoff: 800 ms, stretched by
	// up to 100 %.
	if err := l.RunFor(ctx, 799*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(relists) != 0 {
		t.Fatalf("relisted %s after the watch ended, before the reflector's 800 ms backoff", l.Clock().Since(start))
	}
	if err := l.RunFor(ctx, 801*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(relists) != 1 {
		t.Fatalf("%d relists within 1.6 s, want 1", len(relists))
	}
	r := relists[0]
	if r.Delay < 800*time.Millisecond || r.Delay >= 1600*time.Millisecond {
		t.Errorf("relist after %s, want within [800ms, 1.6s)", r.Delay)
	}
	want := Relist{Component: "attachdetach-controller", Resource: "configmaps", Missed: 3, Delay: r.Delay,
		Updated: []string{"default/x"}, Added: []string{"default/w"}, Deleted: []string{"default/y"}}
	if fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("relist %+v, want %+v", r, want)
	}
	// Tombstones first, then updates and adds in the list's order; z,
	// unchanged, is not announced (a resync, for handlers with a period).
	if got, want := deafHeard.take(), []string{"tombstone default/y last seen as y", "add w", "update x"}; !slices.Equal(got, want) {
		t.Errorf("the relist told the handler %v, want %v", got, want)
	}
	if keys := deaf.GetStore().ListKeys(); len(keys) != 3 || slices.Contains(keys, "default/y") {
		t.Errorf("cache after the relist: %v, want w, x and z", keys)
	}

	// The new watch hears everything again.
	z, _ := cms.Get(ctx, "z", metav1.GetOptions{})
	z.Labels = map[string]string{"after": "relist"}
	if _, err := cms.Update(ctx, z, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deafHeard.take(); !slices.Equal(got, []string{"update z"}) {
		t.Errorf("after the relist the informer heard %v, want [update z]", got)
	}
	if deaf.LastSyncResourceVersion() != other.LastSyncResourceVersion() {
		t.Errorf("resourceVersion %s after the relist, the other informer's %s", deaf.LastSyncResourceVersion(), other.LastSyncResourceVersion())
	}
}

func TestDropWatchEventsRefusesWhatIsNotThere(t *testing.T) {
	l, _ := wiredLoop(t)
	inf, err := l.NewInformer(configMaps, "")
	if err != nil {
		t.Fatal(err)
	}
	inf.BelongsTo("external-provisioner")
	for _, c := range []struct {
		component, resource string
		times               int
		want                string
	}{
		{"external-attacher", "configmaps", 1, "external-attacher has no informer of configmaps"},
		{"external-provisioner", "pods", 1, "external-provisioner has no informer of pods (its informers: [configmaps])"},
		{"external-provisioner", "configmaps", 0, "times must be at least 1"},
	} {
		err := l.DropWatchEvents(c.component, c.resource, c.times, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DropWatchEvents(%s, %s, %d) = %v, want an error with %q", c.component, c.resource, c.times, err, c.want)
		}
	}
	if err := l.DropWatchEvents("external-provisioner", "configmaps", 1, nil); err != nil {
		t.Fatal(err)
	}
	// A second drop of the broken watch breaks nothing more: the watch
	// loses at least as many events as the larger drop says, and one
	// relist serves both (the nemesis drops watches an outage broke).
	if err := l.DropWatchEvents("external-provisioner", "configmaps", 3, nil); err != nil {
		t.Errorf("a second drop on a broken watch: %v", err)
	}
	if inf.drop == nil || inf.drop.left != 3 {
		t.Errorf("after drops of 1 then 3 events the watch loses %+v, want 3", inf.drop)
	}
}

// TestReflectorBackoff: 800 ms doubling to 30 s, each wait stretched by
// the jitter, back to 800 ms two minutes after the last reset.
func TestReflectorBackoff(t *testing.T) {
	var b reflectorBackoff
	t0 := time.Unix(0, 0)
	for _, c := range []struct {
		at     time.Duration
		jitter float64
		want   time.Duration
	}{
		{0, 0, 800 * time.Millisecond},
		{time.Second, 0.5, 2400 * time.Millisecond},
		{2 * time.Second, 0, 3200 * time.Millisecond},
		{3 * time.Second, 0, 6400 * time.Millisecond},
		{4 * time.Second, 0, 12800 * time.Millisecond},
		{5 * time.Second, 0, 25600 * time.Millisecond},
		{6 * time.Second, 0, 30 * time.Second},
		{7 * time.Second, 0.999, 30*time.Second + time.Duration(0.999*float64(30*time.Second))},
		{2*time.Minute + time.Second, 0, 800 * time.Millisecond},
	} {
		if got := b.step(t0.Add(c.at), c.jitter); got != c.want {
			t.Errorf("backoff at %s (jitter %.3f) = %s, want %s", c.at, c.jitter, got, c.want)
		}
	}
}
