// Package controller holds the loop every simulated controller shares, in
// the shape of k8s.io/sample-controller: informer handlers enqueue keys,
// workers take a key at a time and call the controller's sync function.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Queue is a rate-limited work queue of object keys.
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a queue with client-go's default controller rate limiter
// (per-item exponential backoff from 5 ms, plus an overall bucket).
func NewQueue(name string) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Unwrap returns the object an informer handler was given, taking it out of
// the tombstone a delete notification may wrap it in.
func Unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// Worker is one queue and the function that syncs its keys.
type Worker struct {
	Name  string
	Queue Queue
	Sync  Sync
}

// RunAll runs each worker's queue with one goroutine until ctx is done and
// returns when all have stopped.
func RunAll(ctx context.Context, workers ...Worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Run(ctx, w.Name, w.Queue, 1, w.Sync)
		}()
	}
	wg.Wait()
}

// NewQueueWithBackoff returns a queue whose failed keys are retried after
// base, doubling up to max.
func NewQueueWithBackoff(name string, base, max time.Duration) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// EnqueueHandler returns informer handlers that add the key of every added,
// updated or deleted object to q.
func EnqueueHandler(q Queue) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			runtime.HandleError(err)
			return
		}
		q.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// Sync handles one key. An error retries the key with backoff; a
// RequeueAfter error retries it after the given delay without counting as
// a failure.
type Sync func(ctx context.Context, key string) error

// RequeueAfter asks for the key to be processed again after a delay: the
// object is waiting for something another component will do.
type RequeueAfter time.Duration

func (r RequeueAfter) Error() string { return fmt.Sprintf("requeue after %s", time.Duration(r)) }

// Run processes q with workers goroutines until ctx is done, then shuts q
// down. It returns once the workers have stopped.
func Run(ctx context.Context, name string, q Queue, workers int, sync Sync) {
	defer q.ShutDown()
	done := make(chan struct{})
	for i := 0; i < workers; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for processNext(ctx, name, q, sync) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	for i := 0; i < workers; i++ {
		<-done
	}
}

func processNext(ctx context.Context, name string, q Queue, sync Sync) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	err := sync(ctx, key)
	if err != nil && ctx.Err() == nil && !errors.As(err, new(RequeueAfter)) {
		klog.FromContext(ctx).V(2).Info("sync failed, retrying", "controller", name, "key", key, "err", err)
	}
	if ctx.Err() != nil {
		// Shutting down: the error is a consequence, not news.
		q.Done(key)
		return true
	}
	Finish(q, key, err)
	return true
}

// Finish is what a worker does with a key once its sync has returned err:
// forget its backoff on success; queue it again after the delay a
// RequeueAfter asks for (anywhere in err's chain); else back off. Then the
// key is done. The goroutine runner and the simulation's loop both use it,
// so that a key is retried the same way in both.
func Finish(q Queue, key string, err error) {
	var again RequeueAfter
	switch {
	case err == nil:
		q.Forget(key)
	case errors.As(err, &again):
		q.Forget(key)
		q.AddAfter(key, time.Duration(again))
	default:
		q.AddRateLimited(key)
	}
	q.Done(key)
}
