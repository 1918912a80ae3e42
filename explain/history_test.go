package explain

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/trace"
)

// hungHistory is a run that failed waiting for pod app, whose
// NodeStageVolume (sent at +10s) hangs: the shutdown after the steps cut
// the call off, and the kubelet reported that as a FailedMount.
func hungHistory() []trace.Entry {
	start := now.Add(-time.Hour)
	created := metav1.NewTime(start)
	c := claim("data", "sc", corev1.ClaimBound, "pv-1")
	c.CreationTimestamp = created
	pv := csiPV("pv-1", driver, "vol-1", "data")
	pv.CreationTimestamp = created
	n := node("node-1", corev1.ConditionTrue, 0)
	n.Status.Conditions[0].LastTransitionTime = created
	n.CreationTimestamp = created
	p := pod("app", "node-1", "data")
	p.CreationTimestamp = created
	shutdown := ev("Pod", "app", "kubelet", "FailedMount",
		`MountVolume.MountDevice failed for volume "pv-1" : rpc error: code = Canceled desc = grpc: the client connection is closing`, 0, 1)
	shutdown.CreationTimestamp = metav1.NewTime(start.Add(time.Minute))
	write := func(obj runtime.Object, kind, name string) *trace.APIWrite {
		return &trace.APIWrite{Verb: "create", Kind: kind, Namespace: "default", Name: name, Object: obj}
	}
	s := time.Second
	entries := []trace.Entry{
		{Kind: trace.Step, Actor: "scenario", Detail: "step 1/2 started"},
		{Kind: trace.API, Actor: "scenario", Write: write(&c, "PersistentVolumeClaim", "data")},
		{Kind: trace.API, Actor: "external-provisioner", Write: write(&pv, "PersistentVolume", "pv-1")},
		{Kind: trace.API, Actor: "kubelet:node-1", Write: write(&n, "Node", "node-1")},
		{Kind: trace.API, Actor: "scenario", Write: write(&p, "Pod", "app")},
		{Kind: trace.Step, Actor: "scenario", Detail: "step 1 passed"},
		{Kind: trace.Step, Actor: "scenario", Detail: "step 2/2 started"},
		{At: 60 * s, Kind: trace.Step, Actor: "scenario", Detail: "step 2 failed after 1m0s", Err: "timed out"},
		{At: 60 * s, Kind: trace.CSI, Actor: "kubelet:node-1", Verb: "NodeStageVolume", Object: "vol-1", Err: "grpc: the client connection is closing",
			Call: &trace.CSICall{Node: "node-1", Volume: "vol-1", Code: codes.Canceled, StartedAfter: 7, Started: 10 * s}},
		{At: 60 * s, Kind: trace.API, Actor: "kubelet:node-1", Write: write(&shutdown, "Event", "app.FailedMount")},
	}
	for i := range entries {
		entries[i].Seq = i + 1
	}
	return entries
}

func TestSnapshotAt(t *testing.T) {
	h := hungHistory()
	end, at := EndOfSteps(h)
	if end != 8 || at != time.Minute {
		t.Fatalf("EndOfSteps = %d, %s; want the failed wait, #8 at 1m", end, at)
	}
	target := Ref{Kind: KindPod, Namespace: "default", Name: "app"}
	explainAt := func(n int, at time.Duration) string {
		t.Helper()
		e, err := Explain(SnapshotAt(h, n, at), target)
		if err != nil {
			t.Fatal(err)
		}
		return e.String()
	}

	// When the steps ended, the call was in flight: that is the cause, not
	// the error the shutdown later gave it.
	out := explainAt(end, at)
	expectInOrder(t, out, []string{"Pod default/app: Pending on node node-1", "PersistentVolume pv-1: NodeStageVolume in flight for 50s",
		"The kubelet on node-1 sent NodeStageVolume for the volume (handle vol-1) to driver hostpath.csisim.io's node plugin on node-1 50s ago"})
	if strings.Contains(out, "connection is closing") {
		t.Errorf("the shutdown's error is quoted as a cause:\n%s", out)
	}
	// The whole history, shutdown included, is what quoted it.
	if e, err := Explain(SnapshotFromHistory(h), target); err != nil || !strings.Contains(e.String(), "connection is closing") {
		t.Errorf("the whole history does not hold the shutdown's event (so this test tests nothing): %v\n%s", err, e)
	}

	// At +30s, after the first seven entries: sent at +10s, in flight.
	n, err := PointAt(h, 30*time.Second)
	if err != nil || n != 7 {
		t.Fatalf("PointAt(30s) = %d, %v; want the seven entries at +0s", n, err)
	}
	expectInOrder(t, explainAt(n, 30*time.Second), []string{"NodeStageVolume in flight for 20s"})
	// At +5s it was not sent yet.
	if out := explainAt(7, 5*time.Second); strings.Contains(out, "in flight") {
		t.Errorf("at +5s a call sent at +10s is in flight:\n%s", out)
	}
	if s := SnapshotAt(h, 7, 30*time.Second); !s.Now.Equal(now.Add(-time.Hour + 30*time.Second)) {
		t.Errorf("the snapshot at +30s is of %s, want the run's start and 30s", s.Now)
	}

	for _, bad := range []time.Duration{-time.Second, 61 * time.Second} {
		if _, err := PointAt(h, bad); err == nil {
			t.Errorf("PointAt(%s) is no error", bad)
		}
	}
	if _, err := PointAt(h, 61*time.Second); err == nil || !strings.Contains(err.Error(), "the run's steps ended at +1m0s") {
		t.Errorf("PointAt past the steps: %v", err)
	}
}
