package controller

import (
	"context"
	"encoding/json"
	"errors"
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

// SyncEventRecorder writes core/v1 Events at once, on the caller's
// goroutine, as the real recorder writes them (name, source, counts of
// repeated events), but without its background goroutines, so that a
// deterministic simulation sees its events in a fixed order.
//
// An Event it cannot write for want of the API server (a refused
// connection, not an answer) it holds, with every Event recorded after
// it, and tries again later, as the real broadcaster does: after a random
// part of 10 s, then every 10 s, 12 tries in all before it gives that
// Event up (client-go tools/record/event.go recordToSink, recordEvent:
// maxTriesPerEvent, defaultSleepDuration). An answer of the server (an
// error Status) drops the Event at once, as there.
type SyncEventRecorder struct {
	client kubernetes.Interface
	source corev1.EventSource
	clock  clock.PassiveClock
	// after runs a retry later on the simulation's clock; jitter draws
	// the random part of the first wait. With no after, an Event that
	// cannot be written is lost.
	after  func(time.Duration, func())
	jitter func() float64

	mu   sync.Mutex
	seq  int64
	seen map[string]*corev1.Event // by what makes events the same
	// held are the Events waiting for the API server, oldest first;
	// tries is how often the first has been tried.
	held  []heldEvent
	tries int
}

// heldEvent is an Event as it was recorded, to be written later.
type heldEvent struct {
	involved    *corev1.ObjectReference
	annotations map[string]string
	eventtype   string
	reason      string
	message     string
	at          metav1.Time
}

// Upstream's retry policy (client-go tools/record/event.go).
const (
	eventTries      = 12
	eventRetrySleep = 10 * time.Second
)

var _ record.EventRecorder = (*SyncEventRecorder)(nil)

// NewSyncEventRecorder returns a recorder writing as component on host;
// after and jitter, if set, let it try an Event again later (see
// SyncEventRecorder).
func NewSyncEventRecorder(client kubernetes.Interface, component, host string, clk clock.PassiveClock,
	after func(time.Duration, func()), jitter func() float64) *SyncEventRecorder {
	return &SyncEventRecorder{client: client, source: corev1.EventSource{Component: component, Host: host}, clock: clk,
		after: after, jitter: jitter, seen: map[string]*corev1.Event{}}
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
	ev := heldEvent{involved: involved, annotations: annotations, eventtype: eventtype, reason: reason, message: message,
		at: metav1.NewTime(r.clock.Now())}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) > 0 {
		// It waits behind those the server has not taken yet.
		r.held = append(r.held, ev)
		return
	}
	if r.write(ev) || r.after == nil {
		return
	}
	r.held, r.tries = []heldEvent{ev}, 1
	r.after(time.Duration(float64(eventRetrySleep)*r.jitter()), r.retry)
}

// retry tries the held Events again, in order, until one fails again
// (then it waits 10 s more) or none is left.
func (r *SyncEventRecorder) retry() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.held) > 0 {
		if !r.write(r.held[0]) {
			r.tries++
			if r.tries < eventTries {
				r.after(eventRetrySleep, r.retry)
				return
			}
		}
		// Written, or given up: the next one's first try is now.
		r.held, r.tries = r.held[1:], 1
	}
}

// write writes ev, as a new Event or as a repeat of one written before,
// and reports whether it is done with it: false only when the API server
// could not be reached, for a retry.
func (r *SyncEventRecorder) write(e heldEvent) bool {
	involved := e.involved
	ns := involved.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// The real correlator's key names the object's UID too: a pod made
	// again under the same name gets events of its own.
	key := fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s/%s", r.source.Component, involved.Kind, involved.Namespace, involved.Name, involved.UID, e.eventtype, e.reason, e.message)
	ctx := context.Background()
	if prev, ok := r.seen[key]; ok {
		// A repeat: the real correlator counts it on the existing event
		// with a strategic merge patch of count, lastTimestamp and message
		// (client-go tools/record/events_cache.go eventObserve, event.go
		// recordEvent): no resourceVersion, so it never meets a conflict.
		patch, err := json.Marshal(map[string]any{"count": prev.Count + 1, "lastTimestamp": e.at, "message": e.message})
		if err != nil {
			return true
		}
		updated, err := r.client.CoreV1().Events(ns).Patch(ctx, prev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			r.seen[key] = updated
			return true
		}
		if !apierrors.IsNotFound(err) {
			return answered(err)
		}
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Annotations: e.annotations},
		InvolvedObject:      *involved,
		Reason:              e.reason,
		Message:             e.message,
		FirstTimestamp:      e.at,
		LastTimestamp:       e.at,
		Count:               1,
		Type:                e.eventtype,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
	// The real recorder names an event after its object and the time in
	// nanoseconds; on a virtual clock many events share a moment, so the
	// name moves on by a nanosecond until it is free.
	for range 1000 {
		r.seq++
		ev.Name = fmt.Sprintf("%s.%x", involved.Name, e.at.UnixNano()+r.seq)
		created, err := r.client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		if err == nil {
			r.seen[key] = created
			return true
		}
		if !apierrors.IsAlreadyExists(err) {
			return answered(err)
		}
	}
	return true
}

// answered says whether err is the API server's answer (a Status), which
// the real recorder does not retry, rather than a failure to reach it.
func answered(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}
