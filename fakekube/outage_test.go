package fakekube

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/apifault"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
)

// faultServer is a server whose waits are recorded instead of taken, with
// the harness "scenario", and the writes it refused.
func faultServer(t *testing.T) (*Server, *[]time.Duration, *[]Write) {
	t.Helper()
	var waits []time.Duration
	var refused []Write
	s := New(Options{Wait: func(d time.Duration) { waits = append(waits, d) }, Harness: []string{"scenario"},
		OnRefused: func(w Write, err error) {
			if !apierrors.IsTooManyRequests(err) {
				t.Errorf("refused with %v, want 429", err)
			}
			refused = append(refused, w)
		}})
	return s, &waits, &refused
}

func TestSetDown(t *testing.T) {
	ctx := context.Background()
	s, _, _ := faultServer(t)
	cs := kubernetes.NewForConfigOrDie(s.RESTConfig("external-provisioner"))
	harness := kubernetes.NewForConfigOrDie(s.RESTConfig("scenario"))
	w, err := cs.CoreV1().PersistentVolumeClaims("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDown(true)
	select {
	case _, open := <-w.ResultChan():
		if open {
			t.Error("the watch sent an event as the server stopped; want it closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end when the server stopped")
	}
	_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if !utilnet.IsConnectionRefused(err) {
		t.Errorf("create while down: %v, want connection refused", err)
	}
	if _, err := harness.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the harness's list while down: %v, want it served", err)
	}
	s.SetDown(false)
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create after the server is back: %v", err)
	}
}

func TestThrottle(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		n         int
		wantErr   bool
		wantWaits int
	}{
		// client-go retries a 429 with Retry-After up to 10 times
		// (rest/request.go maxRetries), each after the wait it asks for.
		{name: "two 429s are retried by client-go", n: 2, wantWaits: 2},
		{name: "ten 429s are retried by client-go", n: 10, wantWaits: 10},
		{name: "the eleventh 429 reaches the caller", n: 11, wantErr: true, wantWaits: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, waits, refused := faultServer(t)
			cs := kubernetes.NewForConfigOrDie(s.RESTConfig("external-provisioner"))
			s.Throttle("external-provisioner", tt.n, 3*time.Second)
			_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{})
			if tt.wantErr != (err != nil) || (err != nil && !apierrors.IsTooManyRequests(err)) {
				t.Fatalf("create: %v, want error %v (429)", err, tt.wantErr)
			}
			if len(*waits) != tt.wantWaits || slices.ContainsFunc(*waits, func(d time.Duration) bool { return d != 3*time.Second }) {
				t.Errorf("waits %v, want %d of 3s (Retry-After, on the server's clock)", *waits, tt.wantWaits)
			}
			if len(*refused) != tt.n || (*refused)[0].Verb != "create" || (*refused)[0].Resource != "persistentvolumeclaims" {
				t.Errorf("refused %+v, want %d creates of persistentvolumeclaims", *refused, tt.n)
			}
			if left := s.PendingThrottled("external-provisioner"); left != 0 {
				t.Errorf("%d requests still to throttle", left)
			}
		})
	}
}

func TestThrottleLeavesOthersAlone(t *testing.T) {
	ctx := context.Background()
	s, _, refused := faultServer(t)
	s.Throttle("external-attacher", -1, time.Second)
	for _, ua := range []string{"external-provisioner", "scenario"} {
		cs := kubernetes.NewForConfigOrDie(s.RESTConfig(ua))
		if _, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("%s: %v", ua, err)
		}
	}
	attacher := kubernetes.NewForConfigOrDie(s.RESTConfig("external-attacher"))
	if _, err := attacher.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("throttled list: %v, want 429", err)
	}
	if len(*refused) != 0 {
		t.Errorf("a read reported as a refused write: %+v", *refused)
	}
	s.Throttle("external-attacher", 0, 0)
	if _, err := attacher.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("after the throttle ended: %v", err)
	}
}

func TestThrottleAnswersAsKubeAPIServer(t *testing.T) {
	s, _, _ := faultServer(t)
	s.Throttle("", 1, 2*time.Second)
	rw := &bufferResponseWriter{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, "/api/v1/namespaces/default/persistentvolumeclaims", nil)
	req.Header.Set("User-Agent", "kubectl/v1.32.4")
	s.ServeHTTP(rw, req)
	if rw.status != http.StatusTooManyRequests || rw.header.Get("Retry-After") != "2" || rw.body.String() != apifault.TooManyRequestsMessage+"\n" {
		t.Errorf("got %d, Retry-After %q, body %q", rw.status, rw.header.Get("Retry-After"), rw.body.String())
	}
}

func TestSlowWrites(t *testing.T) {
	ctx := context.Background()
	s, waits, _ := faultServer(t)
	cs := kubernetes.NewForConfigOrDie(s.RESTConfig("external-provisioner"))
	s.SlowWrites("", 2*time.Second)
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}}
	if _, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness := kubernetes.NewForConfigOrDie(s.RESTConfig("scenario"))
	if err := harness.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*waits, []time.Duration{2 * time.Second}) {
		t.Errorf("waits %v, want one of 2s: the claim's create (not the read, the Event or the harness's delete)", *waits)
	}
	s.SlowWrites("", 0)
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("again"), metav1.CreateOptions{}); err != nil || len(*waits) != 1 {
		t.Errorf("after the slow writes ended: %v, waits %v", err, *waits)
	}
}
