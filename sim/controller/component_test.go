package controller

import (
	"context"
	"testing"
	"time"
)

// TestRunComponentRunsWorkersAndPeriodicJobs runs a component on
// goroutines until both its worker and its periodic job have run, then
// stops it.
func TestRunComponentRunsWorkersAndPeriodicJobs(t *testing.T) {
	q := NewQueue("test")
	synced, ticked := make(chan string, 1), make(chan struct{}, 1)
	c := Component{
		Workers: []Worker{{Name: "test", Queue: q, Sync: func(_ context.Context, key string) error {
			synced <- key
			return nil
		}}},
		// wait.Until runs the job at once, then after the period: an
		// hour here, so it runs once.
		Periodic: []Periodic{{Every: time.Hour, Run: func(context.Context) { ticked <- struct{}{} }}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		RunComponent(ctx, c)
		close(done)
	}()
	q.Add("key")
	if key := <-synced; key != "key" {
		t.Errorf("synced %q, want key", key)
	}
	<-ticked
	cancel()
	<-done
	if !q.ShuttingDown() {
		t.Error("the worker's queue is not shut down after the component stopped")
	}
}
