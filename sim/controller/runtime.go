package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ref "k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
)

// SimulatedHost is the host name the simulated control plane's components
// run on, where a real component embeds its machine's (os.Hostname): in
// the external-provisioner's event source, <driver>_<host>_<uuid>. A fixed
// name, so that a seed gives the same bytes on every machine; csisim diff
// reads it as a host name, as it reads the real machine's.
const SimulatedHost = "csisim"

// Runtime is what a controller takes from the world it runs in, so that the
// same controller runs on goroutines against a real API server and inside
// the deterministic loop of a simulation.
type Runtime struct {
	// Clock is the time controllers stamp and wait on.
	Clock clock.PassiveClock
	// NewQueue makes a work queue with client-go's default backoff.
	NewQueue func(name string) Queue
	// NewQueueWithBackoff makes a work queue whose failed keys are retried
	// after base, doubling up to max: the sidecars' --retry-interval-start
	// and --retry-interval-max.
	NewQueueWithBackoff func(name string, base, max time.Duration) Queue
	// NewEventRecorder makes an event recorder for a component; the
	// function it returns stops the recorder.
	NewEventRecorder func(client kubernetes.Interface, component, host string) (record.EventRecorder, func())
}

// RealRuntime is the runtime of a controller process: real time,
// client-go's queues and its asynchronous event broadcaster.
func RealRuntime() Runtime {
	return Runtime{Clock: clock.RealClock{}, NewQueue: NewQueue, NewQueueWithBackoff: NewQueueWithBackoff, NewEventRecorder: NewEventRecorder}
}

// SyncEventRecorder writes core/v1 Events at once, on the caller's
// goroutine, as the real recorder writes them (name, source, counts of
// repeated events), but without its background goroutines, so that a
// deterministic simulation sees its events in a fixed order.
type SyncEventRecorder struct {
	client kubernetes.Interface
	source corev1.EventSource
	clock  clock.PassiveClock

	mu   sync.Mutex
	seq  int64
	seen map[string]*corev1.Event // by what makes events the same
}

var _ record.EventRecorder = (*SyncEventRecorder)(nil)

// NewSyncEventRecorder returns a recorder writing as component on host.
func NewSyncEventRecorder(client kubernetes.Interface, component, host string, clk clock.PassiveClock) *SyncEventRecorder {
	return &SyncEventRecorder{client: client, source: corev1.EventSource{Component: component, Host: host}, clock: clk,
		seen: map[string]*corev1.Event{}}
}

// Event records an event.
func (r *SyncEventRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.record(obj, nil, eventtype, reason, message)
}

// Eventf records an event with a formatted message.
func (r *SyncEventRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.record(obj, nil, eventtype, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf records an event with annotations.
func (r *SyncEventRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	r.record(obj, annotations, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r *SyncEventRecorder) record(obj runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	involved, err := ref.GetReference(scheme.Scheme, obj)
	if err != nil {
		return
	}
	ns := involved.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(r.clock.Now())
	// The real correlator's key names the object's UID too: a pod made
	// again under the same name gets events of its own.
	key := fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s/%s", r.source.Component, involved.Kind, involved.Namespace, involved.Name, involved.UID, eventtype, reason, message)
	ctx := context.Background()
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.seen[key]; ok {
		// A repeat: the real correlator counts it on the existing event
		// with a strategic merge patch of count, lastTimestamp and message
		// (client-go tools/record/events_cache.go eventObserve, event.go
		// recordEvent): no resourceVersion, so it never meets a conflict.
		patch, err := json.Marshal(map[string]any{"count": prev.Count + 1, "lastTimestamp": now, "message": message})
		if err != nil {
			return
		}
		if updated, err := r.client.CoreV1().Events(ns).Patch(ctx, prev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err == nil {
			r.seen[key] = updated
			return
		} else if !apierrors.IsNotFound(err) {
			return
		}
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Annotations: annotations},
		InvolvedObject:      *involved,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventtype,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
	// The real recorder names an event after its object and the time in
	// nanoseconds; on a virtual clock many events share a moment, so the
	// name moves on by a nanosecond until it is free.
	for range 1000 {
		r.seq++
		ev.Name = fmt.Sprintf("%s.%x", involved.Name, now.UnixNano()+r.seq)
		created, err := r.client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		if err == nil {
			r.seen[key] = created
			return
		}
		if !apierrors.IsAlreadyExists(err) {
			return
		}
	}
}
