package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/controller"
)

func newLoop(seed uint64) *Loop {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	return New(fakekube.New(fakekube.Options{Clock: clk}), clk, seed)
}

func TestQueueSemantics(t *testing.T) {
	l := newLoop(1)
	q := l.NewQueue("q").(*Queue)
	q.Add("a")
	q.Add("a")
	q.Add("b")
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2: a key is queued once", q.Len())
	}
	key, _ := q.take()
	if key != "a" {
		t.Fatalf("took %q, want a (FIFO)", key)
	}
	q.Add("a") // added while being processed: queued again after Done
	if q.Len() != 1 {
		t.Fatalf("Len = %d while a is processed, want 1", q.Len())
	}
	q.Done("a")
	if q.Len() != 2 {
		t.Fatalf("Len = %d after Done, want 2", q.Len())
	}
}

func TestDelayedAddsRunOnTheVirtualClock(t *testing.T) {
	l := newLoop(1)
	q := l.NewQueue("q").(*Queue)
	var ran []string
	l.AddWorkers(controller.Worker{Name: "w", Queue: q, Sync: func(_ context.Context, key string) error {
		ran = append(ran, key+"@"+l.Clock().Since(time.Unix(0, 0)).String())
		return nil
	}})
	q.AddAfter("late", 10*time.Minute)
	q.AddAfter("late", time.Hour) // the sooner time stays
	q.AddAfter("soon", time.Second)
	start := time.Now()
	if err := l.RunFor(context.Background(), 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	want := []string{"soon@1s", "late@10m0s"}
	if len(ran) != 2 || ran[0] != want[0] || ran[1] != want[1] {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if wall := time.Since(start); wall > 5*time.Second {
		t.Errorf("two hours of virtual time took %s of wall time", wall)
	}
}

func TestRunUntilTimesOutInVirtualTime(t *testing.T) {
	l := newLoop(1)
	err := l.RunUntil(context.Background(), 6*time.Minute, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunUntil = %v, want DeadlineExceeded", err)
	}
	if got := l.Clock().Since(time.Unix(0, 0)); got != 6*time.Minute {
		t.Errorf("clock advanced %s, want 6m", got)
	}
}

// TestSeedChoosesTheOrder: with several queues ready, the seed decides
// which runs first — the same seed the same order, another seed another.
func TestSeedChoosesTheOrder(t *testing.T) {
	order := func(seed uint64) string {
		l := newLoop(seed)
		out := ""
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			q := l.NewQueue(name).(*Queue)
			l.AddWorkers(controller.Worker{Name: name, Queue: q, Sync: func(context.Context, string) error {
				out += name
				return nil
			}})
			q.Add("k")
		}
		if err := l.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := order(1)
	if a != order(1) {
		t.Errorf("seed 1 gave two orders")
	}
	differs := false
	for seed := uint64(2); seed < 10 && !differs; seed++ {
		differs = order(seed) != a
	}
	if !differs {
		t.Errorf("eight other seeds all gave order %s", a)
	}
}
