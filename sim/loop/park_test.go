package loop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/csisim/csisim/sim/controller"
)

// servedBy runs fn on another goroutine and waits for it, as a gRPC call
// waits for the fault proxy's handler: the job's own goroutine is blocked
// while another one parks.
func servedBy(fn func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); fn() }()
	wg.Wait()
}

func TestAParkedJobLetsTheRestOfTheClusterGoOn(t *testing.T) {
	l := newLoop(1)
	t0 := l.Clock().Now()
	at := func() string { return l.Clock().Since(t0).String() }
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s+"@"+at()); mu.Unlock() }

	q := l.NewQueue("q").(*Queue)
	l.AddWorkers(controller.Worker{Name: "w", Queue: q, Sync: func(_ context.Context, key string) error {
		note(key + " start")
		if key == "slow" {
			servedBy(func() {
				wait, _ := l.Park(2 * time.Minute)
				if !wait() {
					t.Error("the park was interrupted")
				}
			})
		}
		note(key + " end")
		return nil
	}})
	l.Every(50*time.Second, func(context.Context) { note("tick") })
	q.Add("slow")
	q.AddAfter("other", time.Second)

	wallStart := time.Now()
	if err := l.RunFor(context.Background(), 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"slow start@0s", "other start@1s", "other end@1s", "tick@50s", "tick@1m40s", "slow end@2m0s", "tick@2m30s"}
	if !slices.Equal(log, want) {
		t.Errorf("ran\n%v\nwant\n%v", log, want)
	}
	if wall := time.Since(wallStart); wall > 10*time.Second {
		t.Logf("three minutes of virtual time took %s of wall time", wall) // not asserted: shared machines are slow
	}
}

func TestAnInterruptedParkEndsAtTheNextStep(t *testing.T) {
	l := newLoop(1)
	q := l.NewQueue("q").(*Queue)
	interrupts := make(chan func(), 1)
	var passed *bool
	var ended time.Duration
	t0 := l.Clock().Now()
	l.AddWorkers(controller.Worker{Name: "w", Queue: q, Sync: func(_ context.Context, key string) error {
		servedBy(func() {
			wait, interrupt := l.Park(0) // until interrupted
			interrupts <- interrupt
			p := wait()
			passed = &p
		})
		ended = l.Clock().Since(t0)
		return nil
	}})
	q.Add("hang")
	if err := l.RunFor(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if passed != nil {
		t.Fatalf("a park without an end returned after a minute")
	}
	(<-interrupts)() // as the proxy does when it stops
	if err := l.RunFor(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if passed == nil || *passed {
		t.Fatalf("after interrupt: passed = %v, want false", passed)
	}
	if ended != time.Minute {
		t.Errorf("the job ended at %s, want 1m0s (when it was interrupted)", ended)
	}
}

func TestParkOutsideAJobPassesAtOnce(t *testing.T) {
	l := newLoop(1)
	t0 := l.Clock().Now()
	wait, _ := l.Park(time.Hour)
	if !wait() {
		t.Fatal("wait outside a job = false, want true")
	}
	if d := l.Clock().Since(t0); d != 0 {
		t.Fatalf("clock moved by %s", d)
	}
}

func TestStopReleasesParkedJobs(t *testing.T) {
	l := newLoop(1)
	q := l.NewQueue("q").(*Queue)
	released := make(chan bool, 1)
	l.AddWorkers(controller.Worker{Name: "w", Queue: q, Sync: func(_ context.Context, key string) error {
		servedBy(func() {
			wait, _ := l.Park(time.Hour)
			released <- wait()
		})
		return nil
	}})
	q.Add("k")
	if err := l.RunFor(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	l.Stop()
	select {
	case p := <-released:
		if p {
			t.Error("a park released by Stop reported that its time passed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not release the parked job")
	}
}

func TestParkedRunsAreDeterministic(t *testing.T) {
	run := func() string {
		l := newLoop(7)
		q := l.NewQueue("q").(*Queue)
		var log []string
		var mu sync.Mutex
		l.AddWorkers(controller.Worker{Name: "w", Queue: q, Sync: func(_ context.Context, key string) error {
			var n int
			fmt.Sscanf(key, "k%d", &n)
			servedBy(func() {
				wait, _ := l.Park(time.Duration(n%3+1) * time.Second)
				wait()
			})
			mu.Lock()
			log = append(log, key)
			mu.Unlock()
			return nil
		}})
		for i := range 20 {
			q.Add(fmt.Sprintf("k%d", i))
		}
		if err := l.RunFor(context.Background(), time.Minute); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(log)
	}
	first := run()
	for range 5 {
		if got := run(); got != first {
			t.Fatalf("runs differ:\n%s\n%s", first, got)
		}
	}
}
