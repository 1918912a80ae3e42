package fakekube

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

// TestEventsExpire: Events of both APIs go EventTTL after their last write
// on the server's clock, as with kube-apiserver's --event-ttl; a watcher
// sees them DELETED, the write hook does not hear of it, and other kinds
// stay.
func TestEventsExpire(t *testing.T) {
	coreEvents, newEvents, configMaps := coreV1.WithResource("events"), eventsV1.WithResource("events"), coreV1.WithResource("configmaps")
	tests := []struct {
		name   string
		gvr    schema.GroupVersionResource
		ttl    time.Duration   // Options.EventTTL
		writes []time.Duration // the create, then updates, after the start
		goneAt time.Duration   // 0: still there at the end
	}{
		{name: "a core Event goes an hour after it was created", gvr: coreEvents, writes: []time.Duration{0}, goneAt: time.Hour},
		{name: "an events.k8s.io Event goes too", gvr: newEvents, writes: []time.Duration{10 * time.Second}, goneAt: time.Hour + 10*time.Second},
		{name: "each write renews it", gvr: coreEvents, writes: []time.Duration{0, 30 * time.Minute, 50 * time.Minute}, goneAt: 110 * time.Minute},
		{name: "the TTL is an option", gvr: coreEvents, ttl: 5 * time.Minute, writes: []time.Duration{0}, goneAt: 5 * time.Minute},
		{name: "a negative TTL keeps Events for ever", gvr: coreEvents, ttl: -1, writes: []time.Duration{0}},
		{name: "other kinds do not expire", gvr: configMaps, writes: []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := testingclock.NewFakeClock(start)
			var removals []string
			srv := New(Options{Clock: clk, EventTTL: tt.ttl, OnWrite: func(w Write) {
				if w.Removed {
					removals = append(removals, w.Name)
				}
			}})
			res := srv.reg.byGVR[tt.gvr]
			w, err := srv.store.openWatch(res, selector{}, watchOptions{resourceVersion: srv.ResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			for i, at := range tt.writes {
				clk.SetTime(start.Add(at))
				writeExpiring(t, srv, res, i)
			}
			end := tt.goneAt
			if end == 0 {
				end = 100 * time.Hour
			}
			clk.SetTime(start.Add(end - time.Second))
			if _, err := srv.store.get(res, "default", "ev"); err != nil {
				t.Fatalf("a second before it is due: %v", err)
			}
			clk.SetTime(start.Add(end))
			_, err = srv.store.get(res, "default", "ev")
			if gone := apierrors.IsNotFound(err); gone != (tt.goneAt != 0) {
				t.Fatalf("at %v: get = %v, want gone %v", end, err, tt.goneAt != 0)
			}
			last := lastEvent(t, w, len(tt.writes))
			if tt.goneAt != 0 && last.Type != watch.Deleted {
				t.Errorf("watch's last event %s, want DELETED", last.Type)
			}
			if len(removals) != 0 {
				t.Errorf("write hook heard of removals %v, want none", removals)
			}
		})
	}
}

// writeExpiring creates (n == 0) or updates the object "ev" of res.
func writeExpiring(t *testing.T, srv *Server, res *resource, n int) {
	t.Helper()
	var obj runtime.Object
	om := metav1.ObjectMeta{Namespace: "default", Name: "ev"}
	note := fmt.Sprintf("write %d", n)
	switch res.gvr.Group {
	case "events.k8s.io":
		obj = &eventsv1.Event{ObjectMeta: om, Note: note, EventTime: metav1.MicroTime{Time: srv.clock.Now()},
			ReportingController: "test", ReportingInstance: "test", Action: "Test", Reason: "Test", Type: "Normal",
			Regarding: corev1.ObjectReference{Kind: "Node", Name: "n"}}
	default:
		if res.kind == "ConfigMap" {
			obj = &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"note": note}}
		} else {
			obj = &corev1.Event{ObjectMeta: om, Message: note, InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n"}}
		}
	}
	var err error
	if n == 0 {
		_, err = srv.store.create(context.Background(), "test", "test", res, "default", obj)
	} else {
		_, err = srv.store.update(context.Background(), "test", "test", "update", res, "default", "ev", "", obj, nil, false)
	}
	if err != nil {
		t.Fatalf("write %d: %v", n, err)
	}
}

// lastEvent reads what the watcher has queued (at least atLeast events) and
// returns the last.
func lastEvent(t *testing.T, w *watcher, atLeast int) watch.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := w.next(ctx)
	if err != nil || len(evs) < atLeast {
		t.Fatalf("watch: %d events, %v; want at least %d", len(evs), err, atLeast)
	}
	last := evs[len(evs)-1]
	if m, err := meta.Accessor(last.Object); err != nil || m.GetName() != "ev" {
		t.Fatalf("watch's last event is about %v", last.Object)
	}
	return last
}
