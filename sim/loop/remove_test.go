package loop

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/controller"
)

// TestRemovedComponentStopsRunning stops one of two components as a
// restart does: its periodic job, its worker and its informers; the other
// goes on.
func TestRemovedComponentStopsRunning(t *testing.T) {
	ctx := context.Background()
	l, cs := wiredLoop(t)
	type component struct {
		name   string
		synced []string
		ticks  int
		stop   func()
		worker controller.Worker
	}
	var comps []*component
	for _, name := range []string{"kept", "stopped"} {
		c := &component{name: name}
		q := l.NewQueue(name)
		c.worker = controller.Worker{Name: name, Queue: q, Sync: func(_ context.Context, key string) error {
			c.synced = append(c.synced, key)
			return nil
		}}
		inf, err := l.NewInformer(configMaps, "")
		if err != nil {
			t.Fatal(err)
		}
		inf.BelongsTo(name)
		if _, err := inf.AddEventHandler(controller.EnqueueHandler(q)); err != nil {
			t.Fatal(err)
		}
		l.AddWorkers(c.worker)
		c.stop = l.Every(time.Minute, func(context.Context) { c.ticks++ })
		comps = append(comps, c)
	}
	create := func(name string) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")
	if err := l.RunFor(ctx, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	kept, stopped := comps[0], comps[1]
	stopped.stop()
	l.RemoveWorkers(stopped.worker)
	l.RemoveInformers(stopped.name)
	stopped.worker.Queue.Add("late") // a handler still holding the queue
	create("after")
	if err := l.RunFor(ctx, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := []string{"default/before", "default/after"}; !slices.Equal(kept.synced, want) || kept.ticks != 6 {
		t.Errorf("the kept component synced %v and ticked %d times, want %v and 6", kept.synced, kept.ticks, want)
	}
	if want := []string{"default/before"}; !slices.Equal(stopped.synced, want) || stopped.ticks != 1 {
		t.Errorf("the stopped component synced %v and ticked %d times, want %v and 1", stopped.synced, stopped.ticks, want)
	}
	if got := l.InformerResources(stopped.name); len(got) != 0 {
		t.Errorf("the stopped component still has informers of %v", got)
	}
}
