package fakekube

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestHistoryRing: the history keeps the last limit events, oldest first,
// through any number of wrap-arounds, and knows which resourceVersions a
// watch can no longer resume from.
func TestHistoryRing(t *testing.T) {
	tests := []struct {
		limit, pushed int // events with resourceVersions 1..pushed
		from          uint64
		wantSince     []uint64
		wantTooOld    string
	}{
		{limit: 3, pushed: 0, from: 0, wantSince: nil},
		{limit: 3, pushed: 2, from: 0, wantSince: []uint64{1, 2}},
		{limit: 3, pushed: 3, from: 1, wantSince: []uint64{2, 3}},
		{limit: 3, pushed: 4, from: 1, wantSince: []uint64{2, 3, 4}},
		{limit: 3, pushed: 4, from: 0, wantTooOld: "too old resource version: 0 (1)"},
		{limit: 3, pushed: 10, from: 7, wantSince: []uint64{8, 9, 10}},
		{limit: 3, pushed: 10, from: 9, wantSince: []uint64{10}},
		{limit: 3, pushed: 10, from: 10, wantSince: nil},
		{limit: 3, pushed: 10, from: 6, wantTooOld: "too old resource version: 6 (7)"},
		{limit: 1, pushed: 5, from: 4, wantSince: []uint64{5}},
		{limit: 1, pushed: 5, from: 3, wantTooOld: "too old resource version: 3 (4)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("limit %d, %d pushed, from %d", tt.limit, tt.pushed, tt.from), func(t *testing.T) {
			h := history{limit: tt.limit}
			for rv := 1; rv <= tt.pushed; rv++ {
				h.push(&event{rv: uint64(rv)})
			}
			if want := min(tt.limit, tt.pushed); h.len() != want || cap(h.events) > max(tt.limit, 4) {
				t.Errorf("holds %d events (capacity %d), want %d", h.len(), cap(h.events), want)
			}
			if err := h.tooOld(tt.from); tt.wantTooOld != "" {
				if err == nil || err.Error() != tt.wantTooOld || err.Status().Code != 410 || err.Status().Reason != metav1.StatusReasonExpired {
					t.Fatalf("tooOld(%d) = %v, want 410 Expired %q", tt.from, err, tt.wantTooOld)
				}
				return
			} else if err != nil {
				t.Fatalf("tooOld(%d) = %v", tt.from, err)
			}
			var got []uint64
			for _, ev := range h.since(tt.from) {
				got = append(got, ev.rv)
			}
			if !slices.Equal(got, tt.wantSince) {
				t.Errorf("since(%d) = %v, want %v", tt.from, got, tt.wantSince)
			}
		})
	}
}

// TestWatchFromExpiredResourceVersion: over HTTP as in-process, a watch
// from a resourceVersion the history no longer holds gets what the real
// server sends: one ERROR event with a 410 Expired Status, then the end.
func TestWatchFromExpiredResourceVersion(t *testing.T) {
	for name, config := range map[string]func(*Server) *rest.Config{
		"in-process": func(srv *Server) *rest.Config { return srv.RESTConfig("test") },
		"http":       func(srv *Server) *rest.Config { return serveHTTP(t, srv) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv := New(Options{HistoryLimit: 2})
			cms := kubernetes.NewForConfigOrDie(config(srv)).CoreV1().ConfigMaps("default")
			var rvs []string
			for i := range 4 {
				cm, err := cms.Create(ctx, configMap(i), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				rvs = append(rvs, cm.ResourceVersion)
			}
			// The history holds the last two creates: a watch can start
			// from the resourceVersion before them, and no older.
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[0]})
			if err != nil {
				t.Fatalf("watch: %v, want an ERROR event", err)
			}
			defer w.Stop()
			ev := <-w.ResultChan()
			st, ok := ev.Object.(*metav1.Status)
			want := fmt.Sprintf("too old resource version: %s (%s)", rvs[0], rvs[1])
			if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != want {
				t.Fatalf("first event %s %#v, want ERROR 410 Expired %q", ev.Type, ev.Object, want)
			}
			if ev, open := <-w.ResultChan(); open {
				t.Errorf("after the ERROR event: %s, want the watch to end", ev.Type)
			}
			resumed, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[1]})
			if err != nil {
				t.Fatal(err)
			}
			defer resumed.Stop()
			if ev := <-resumed.ResultChan(); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "cm-2" {
				t.Errorf("watch from the oldest resourceVersion held: first event %s %v, want ADDED cm-2", ev.Type, ev.Object)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// recordingListWatch lists and watches ConfigMaps labelled w=1, counts the
// lists, keeps the watch it opened last and the errors its watches ended
// with. It declines watch-list streams, so the reflector lists and watches
// as it does against servers without them.
type recordingListWatch struct {
	cs kubernetes.Interface

	mu     sync.Mutex
	lists  int
	last   watch.Interface
	errors []*metav1.Status
}

func (lw *recordingListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *recordingListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	lw.mu.Lock()
	lw.lists++
	lw.mu.Unlock()
	opts.LabelSelector = "w=1"
	return lw.cs.CoreV1().ConfigMaps("default").List(context.Background(), opts)
}

func (lw *recordingListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	opts.LabelSelector = "w=1"
	w, err := lw.cs.CoreV1().ConfigMaps("default").Watch(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	recorded := watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if st, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error {
			lw.mu.Lock()
			lw.errors = append(lw.errors, st)
			lw.mu.Unlock()
		}
		return ev, true
	})
	lw.mu.Lock()
	lw.last = recorded
	lw.mu.Unlock()
	return recorded, nil
}

func (lw *recordingListWatch) snapshot() (lists int, last watch.Interface, errs []*metav1.Status) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.lists, lw.last, slices.Clone(lw.errors)
}

// TestReflectorRelistsAfterGone drives a real client-go reflector over
// HTTP: when its watch ends and the history has moved past the last
// resourceVersion it saw, the new watch gets 410 Gone, and the reflector
// lists again and carries on.
func TestReflectorRelistsAfterGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := New(Options{HistoryLimit: 3})
	cs := kubernetes.NewForConfigOrDie(serveHTTP(t, srv))
	cms := cs.CoreV1().ConfigMaps("default")
	labelled := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"w": "1"}}}
	}
	mustCreate := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	mustCreate(labelled("first"))
	lw := &recordingListWatch{cs: cs}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	go cache.NewReflector(lw, &corev1.ConfigMap{}, store, 0).RunWithContext(ctx)
	eventually(t, "the reflector lists", func() bool { return len(store.ListKeys()) == 1 })
	// An event on the watch, so that its end is not a "very short watch".
	second := mustCreate(labelled("second"))
	eventually(t, "the reflector sees the second ConfigMap", func() bool { return len(store.ListKeys()) == 2 })
	for i := range 5 { // more writes than the history holds, none the reflector sees
		mustCreate(configMap(i))
	}
	_, last, _ := lw.snapshot()
	last.Stop() // as a server-side watch timeout would end it
	eventually(t, "the reflector lists again", func() bool { lists, _, _ := lw.snapshot(); return lists == 2 })
	_, _, errs := lw.snapshot()
	want := fmt.Sprintf("too old resource version: %s (%d)", second.ResourceVersion, mustAtoi(t, second.ResourceVersion)+2)
	if len(errs) != 1 || errs[0].Code != 410 || errs[0].Reason != metav1.StatusReasonExpired || errs[0].Message != want {
		t.Fatalf("watch errors %+v, want one 410 Expired %q", errs, want)
	}
	mustCreate(labelled("third"))
	eventually(t, "the reflector watches again", func() bool { return len(store.ListKeys()) == 3 })
	if !apierrors.IsResourceExpired(apierrors.FromObject(errs[0])) {
		t.Errorf("client-go does not take %v for an expired resourceVersion", errs[0])
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
