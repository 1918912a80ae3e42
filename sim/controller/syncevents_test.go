package controller

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// eventServer is a fake API server that refuses Event writes as a stopped
// server refuses connections while down, or answers them with answer when
// it is set; it reads them back in any case.
type eventServer struct {
	*fake.Clientset
	down   bool
	answer error
}

func newEventServer() *eventServer {
	s := &eventServer{Clientset: fake.NewClientset()}
	s.PrependReactor("*", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch {
		case a.GetVerb() != "create" && a.GetVerb() != "patch":
			return false, nil, nil
		case s.down:
			return true, nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		case s.answer != nil:
			return true, nil, s.answer
		}
		return false, nil, nil
	})
	return s
}

func (s *eventServer) reasons(t *testing.T) []string {
	t.Helper()
	list, err := s.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	return out
}

// retries stands for the simulation's clock: what the recorder asked to
// run later, and after how long.
type retries struct {
	waits []time.Duration
	next  func()
}

func (r *retries) after(d time.Duration, fn func()) {
	r.waits = append(r.waits, d)
	r.next = fn
}

// run runs the retry the recorder asked for last.
func (r *retries) run(t *testing.T) {
	t.Helper()
	if r.next == nil {
		t.Fatal("the recorder asked for no retry")
	}
	fn := r.next
	r.next = nil
	fn()
}

func TestSyncEventRecorderRetriesWhileTheServerIsDown(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "u1"}}
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newEventServer()
	var r retries
	rec := NewSyncEventRecorder(s, "kubelet", "node-1", clk, r.after, func() float64 { return 0.5 })

	s.down = true
	rec.Event(pod, corev1.EventTypeWarning, "First", "one")
	recorded := clk.Now()
	clk.SetTime(recorded.Add(time.Second))
	rec.Event(pod, corev1.EventTypeNormal, "Second", "two")
	if got := s.reasons(t); len(got) != 0 {
		t.Fatalf("events written while the server is down: %v", got)
	}
	r.run(t) // still down: another try 10 s later
	s.down = false
	r.run(t)
	if got := s.reasons(t); len(got) != 2 || got[0] != "First" || got[1] != "Second" {
		t.Fatalf("events once the server is back: %v, want First, Second", got)
	}
	if want := []time.Duration{5 * time.Second, 10 * time.Second}; len(r.waits) != 2 || r.waits[0] != want[0] || r.waits[1] != want[1] {
		t.Errorf("the recorder waited %v, want %v (a random part of 10 s, then 10 s)", r.waits, want)
	}
	list, _ := s.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	for _, e := range list.Items {
		if e.Reason == "First" && !e.FirstTimestamp.Time.Equal(recorded) {
			t.Errorf("First is stamped %s, want %s, when it was recorded", e.FirstTimestamp, recorded)
		}
	}
	if r.next != nil {
		t.Error("the recorder asked for a retry with nothing left to write")
	}
}

func TestSyncEventRecorderGivesUpAfterTwelveTries(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}}
	clk := testingclock.NewFakePassiveClock(time.Now())
	s := newEventServer()
	var r retries
	rec := NewSyncEventRecorder(s, "kubelet", "node-1", clk, r.after, func() float64 { return 0 })
	s.down = true
	rec.Event(pod, corev1.EventTypeWarning, "Lost", "gone")
	rec.Event(pod, corev1.EventTypeNormal, "Kept", "kept")
	// Tries 2 to 12 of Lost; the twelfth fails too, and Kept's first try
	// follows at once.
	for range 11 {
		r.run(t)
	}
	s.down = false
	r.run(t)
	if got := s.reasons(t); len(got) != 1 || got[0] != "Kept" {
		t.Fatalf("events written: %v, want only Kept (Lost given up after 12 tries)", got)
	}
}

func TestSyncEventRecorderDropsWhatTheServerRefuses(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}}
	s := newEventServer()
	var r retries
	rec := NewSyncEventRecorder(s, "kubelet", "node-1", testingclock.NewFakePassiveClock(time.Now()), r.after, func() float64 { return 0 })
	s.answer = apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", nil)
	rec.Event(pod, corev1.EventTypeWarning, "Refused", "no")
	s.answer = nil
	rec.Event(pod, corev1.EventTypeNormal, "Next", "yes")
	if r.next != nil {
		t.Error("the recorder retries an Event the server answered with an error")
	}
	if got := s.reasons(t); len(got) != 1 || got[0] != "Next" {
		t.Fatalf("events written: %v, want Next only", got)
	}
}
