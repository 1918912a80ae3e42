package scenarios

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/trace"
)

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("x.yaml", []byte(src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runOnFakeClock runs s and advances clk by step whenever the run is waiting
// on it, so that timeouts of minutes take milliseconds.
func runOnFakeClock(t *testing.T, ctx context.Context, r *Runner, clk *testingclock.FakeClock, step time.Duration, s *Scenario, objects objectStore) (*Result, error) {
	t.Helper()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.run(ctx, s, objects)
		done <- outcome{res, err}
	}()
	for {
		select {
		case o := <-done:
			return o.res, o.err
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(step)
			}
		}
	}
}

// simulateControllers plays the external-provisioner, PV controller,
// scheduler, attach/detach controller and kubelet for one PVC and one pod,
// just enough for basic-lifecycle, recording the CSI calls they would make.
func simulateControllers(ctx context.Context, t *testing.T, client dynamic.Interface, sim *fakeSimulator) {
	pvcs := client.Resource(pvcsGVR).Namespace("default")
	pods := client.Resource(podsGVR).Namespace("default")
	pvs := client.Resource(pvsGVR)
	var bound, running bool
	var pvName string
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		pvc, err := pvcs.Get(ctx, "data", metav1.GetOptions{})
		pvcExists := err == nil
		if pvcExists && !bound {
			uid := "0f1e2d3c"
			pvName = "pvc-" + uid
			sim.call("CreateVolume", pvName)
			pv := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "PersistentVolume",
				"metadata": map[string]any{
					"name":        pvName,
					"annotations": map[string]any{"pv.kubernetes.io/provisioned-by": "hostpath.csisim.io"},
				},
				"spec": map[string]any{"csi": map[string]any{"driver": "hostpath.csisim.io", "volumeHandle": pvName}},
			}}
			if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Errorf("controller: create pv: %v", err)
				return
			}
			pvc.SetUID("0f1e2d3c")
			_ = unstructured.SetNestedField(pvc.Object, pvName, "spec", "volumeName")
			_ = unstructured.SetNestedField(pvc.Object, "Bound", "status", "phase")
			// As the PV controller: the bound claim shows its volume's access modes.
			_ = unstructured.SetNestedSlice(pvc.Object, []any{"ReadWriteOnce"}, "status", "accessModes")
			if _, err := pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
				t.Errorf("controller: bind pvc: %v", err)
				return
			}
			bound = true
		}
		pod, err := pods.Get(ctx, "app", metav1.GetOptions{})
		switch {
		case err == nil && bound && !running:
			sim.call("ControllerPublishVolume", pvName)
			sim.call("NodeGetCapabilities", "")
			sim.call("NodeStageVolume", pvName)
			sim.call("NodePublishVolume", pvName)
			_ = unstructured.SetNestedField(pod.Object, "Running", "status", "phase")
			if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Errorf("controller: start pod: %v", err)
				return
			}
			running = true
		case apierrors.IsNotFound(err) && running:
			sim.call("NodeUnpublishVolume", pvName)
			sim.call("NodeUnstageVolume", pvName)
			sim.call("ControllerUnpublishVolume", pvName)
			running = false
		}
		if bound && !pvcExists && !running {
			if _, err := pvs.Get(ctx, pvName, metav1.GetOptions{}); err == nil {
				sim.call("DeleteVolume", pvName)
				if err := pvs.Delete(ctx, pvName, metav1.DeleteOptions{}); err != nil {
					t.Errorf("controller: delete pv: %v", err)
				}
			}
		}
	}
}

func TestRunBasicLifecycleFromLibrary(t *testing.T) {
	s, err := Load("library/basic-lifecycle.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cluster := newFakeCluster(clock.RealClock{})
	sim := &fakeSimulator{}
	// Calls from before the scenario started must not count.
	sim.call("Probe", "")
	sim.call("CreateVolume", "left-over")

	var wg sync.WaitGroup
	wg.Add(1)
	controllers, stopControllers := context.WithCancel(ctx)
	go func() {
		defer wg.Done()
		simulateControllers(controllers, t, cluster.client, sim)
	}()
	defer func() { stopControllers(); wg.Wait() }()

	var out bytes.Buffer
	rec := trace.New(clock.RealClock{})
	// The fake controllers work in the default namespace.
	r := &Runner{Backend: sim, Recorder: rec, Out: &out, PollInterval: time.Millisecond, Namespace: "default"}
	res, err := r.run(ctx, s, cluster.objects)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, out.String())
	}
	if !res.Passed() || len(res.Steps) != len(s.Steps) {
		t.Errorf("result = %+v", res)
	}
	if res.Vars["pv"] != "pvc-0f1e2d3c" || res.Vars["pvcUID"] != "0f1e2d3c" {
		t.Errorf("vars = %v", res.Vars)
	}
	if got := res.Steps[3].Name; got != "assert pv/pvc-0f1e2d3c" {
		t.Errorf("step 4 name after expansion = %q", got)
	}
	steps := rec.Filter(trace.Step)
	if len(steps) != 2*len(s.Steps) {
		t.Errorf("got %d step trace entries, want %d", len(steps), 2*len(s.Steps))
	}
	for _, e := range steps {
		if e.Actor != "scenario" || e.Err != "" {
			t.Errorf("trace entry %v", e)
		}
	}
	if !strings.Contains(out.String(), "ok   13/13 assert csiCalls") {
		t.Errorf("progress output:\n%s", out.String())
	}
}

func TestRunWaitTimeout(t *testing.T) {
	src := `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        status: {phase: Pending}
  - wait:
      object: pod/app
      jsonPath: '{.status.phase}'
      equals: Running
  - sleep: 1s
`
	s := mustParse(t, src)
	clk := testingclock.NewFakeClock(time.Now())
	cluster := newFakeCluster(clk)
	rec := trace.New(clk)
	r := &Runner{Backend: fakeBackend{}, Recorder: rec, Clock: clk}
	res, err := runOnFakeClock(t, context.Background(), r, clk, time.Second, s, cluster.objects)

	var serr *StepError
	if !errors.As(err, &serr) {
		t.Fatalf("error %T %v, want *StepError", err, err)
	}
	want := StepError{Step: 2, Name: "wait pod/app", Action: "wait", File: "x.yaml", Line: 8,
		Expected: "pod/app {.status.phase} == Running", Observed: "Pending"}
	if serr.Step != want.Step || serr.Name != want.Name || serr.Action != want.Action || serr.File != want.File ||
		serr.Line != want.Line || serr.Expected != want.Expected || serr.Observed != want.Observed {
		t.Errorf("StepError = %+v\nwant %+v", *serr, want)
	}
	wantMsg := `step 2 "wait pod/app" at x.yaml:8: timed out after 60s waiting for pod/app {.status.phase} == Running; last seen: Pending`
	if err.Error() != wantMsg {
		t.Errorf("message:\n got %s\nwant %s", err, wantMsg)
	}
	outcomes := [3]Outcome{res.Steps[0].Outcome, res.Steps[1].Outcome, res.Steps[2].Outcome}
	if outcomes != [3]Outcome{Passed, Failed, NotRun} {
		t.Errorf("outcomes = %v", outcomes)
	}
	if d := res.Steps[1].Duration; d < DefaultWaitTimeout {
		t.Errorf("wait took %v on the fake clock, want at least %v", d, DefaultWaitTimeout)
	}
	entries := rec.Filter(trace.Step)
	last := entries[len(entries)-1]
	if last.Verb != "wait" || last.Object != "wait pod/app" || !strings.Contains(last.Err, "timed out") {
		t.Errorf("last trace entry = %v", last)
	}
}

func TestRunWaitSeesChanges(t *testing.T) {
	src := `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolume, metadata: {name: a, labels: {tier: x}}}
        ---
        {apiVersion: v1, kind: PersistentVolume, metadata: {name: b}}
  - wait: {object: pv, labelSelector: tier=x, count: 1}
  - wait: {object: persistentvolumes, count: 0, timeout: 5s}
  - wait: {object: pv/a, gone: true}
`
	s := mustParse(t, src)
	cluster := newFakeCluster(clock.RealClock{})
	ctx := context.Background()
	seen := make(chan struct{})
	go func() {
		// Once the first wait has seen the volumes, delete both while the
		// scenario waits for them to go.
		<-seen
		for _, name := range []string{"a", "b"} {
			time.Sleep(2 * time.Millisecond)
			if err := cluster.client.Resource(pvsGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting pv %s: %v", name, err)
			}
		}
	}()
	r := &Runner{Backend: fakeBackend{}, PollInterval: time.Millisecond, AfterStep: func(_ context.Context, st StepResult) {
		if st.Step == 2 {
			close(seen)
		}
	}}
	if _, err := r.run(ctx, s, cluster.objects); err != nil {
		t.Fatal(err)
	}
}

func TestRunStepFailures(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		backend Backend
		// want are substrings of the error; wantStep the failing step.
		want     []string
		wantStep int
		wantObs  string
	}{
		{
			name: "assert mismatch",
			src: `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Pending}}
  - assert: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound}
`,
			want:     []string{`step 2 "assert pvc/data" at x.yaml:5: expected pvc/data {.status.phase} == Bound; seen: Pending`},
			wantStep: 2,
			wantObs:  "Pending",
		},
		{
			name: "assert on a missing object",
			src: `steps:
  - assert: {object: pvc/nope}
`,
			want:     []string{"expected pvc/nope to exist; seen: <not found>"},
			wantStep: 1,
			wantObs:  "<not found>",
		},
		{
			name: "delete of a missing object",
			src: `steps:
  - delete: {object: pod/ghost}
`,
			want:     []string{"cannot delete pod/ghost: it does not exist (add ignoreNotFound: true"},
			wantStep: 1,
			wantObs:  "<not found>",
		},
		{
			name: "apply of an unknown kind names the manifest line",
			src: `steps:
  - sleep: 1ms
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: fine}
        ---
        apiVersion: example.com/v1
        kind: Gadget
        metadata: {name: g}
`,
			want:     []string{`step 2 "apply PersistentVolumeClaim/fine, Gadget/g" at x.yaml:3: x.yaml:9: apply Gadget/g: unknown kind Gadget in example.com/v1`},
			wantStep: 2,
		},
		{
			name: "save of an empty field",
			src: `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - wait: {object: pvc/data, save: {pv: '{.spec.volumeName}'}}
`,
			want:     []string{"save pv: {.spec.volumeName} is empty on pvc/data"},
			wantStep: 2,
		},
		{
			name: "unknown kind in a wait times out with the discovery error",
			src: `steps:
  - wait: {object: gizmo/a, timeout: 20ms}
`,
			want:     []string{`timed out after 20ms waiting for gizmo/a to exist; last seen: error: unknown kind "gizmo": the API server has no resource, short name or Kind of that name`},
			wantStep: 1,
			wantObs:  `error: unknown kind "gizmo": the API server has no resource, short name or Kind of that name`,
		},
		{
			name: "csiCalls on a backend that cannot see them fails before any step runs",
			src: `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - assert: {csiCalls: {sequence: [CreateVolume]}}
`,
			backend:  fakeBackend{},
			want:     []string{`step 2 "assert csiCalls" at x.yaml:5: csiCalls needs a backend that can see CSI calls`},
			wantStep: 2,
		},
		{
			name: "csiCalls sequence mismatch shows the calls",
			src: `steps:
  - assert:
      csiCalls:
        sequence: [CreateVolume, NodeStageVolume]
`,
			backend:  &fakeSimulator{calls: csiLog("DeleteVolume@before"), scripted: csiLog("CreateVolume@v", "NodePublishVolume@v")},
			want:     []string{"expected CSI calls to be exactly: CreateVolume, NodeStageVolume; seen: CreateVolume, NodePublishVolume", ">> 2  NodeStageVolume  NodePublishVolume v"},
			wantStep: 1,
			wantObs:  "CreateVolume, NodePublishVolume",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.src)
			cluster := newFakeCluster(clock.RealClock{})
			backend := tt.backend
			if backend == nil {
				backend = &fakeSimulator{}
			}
			r := &Runner{Backend: backend, PollInterval: time.Millisecond}
			res, err := r.run(context.Background(), s, cluster.objects)
			var serr *StepError
			if !errors.As(err, &serr) {
				t.Fatalf("error %T %v, want *StepError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if serr.Step != tt.wantStep || serr.Observed != tt.wantObs {
				t.Errorf("step %d observed %q; want step %d observed %q", serr.Step, serr.Observed, tt.wantStep, tt.wantObs)
			}
			if res == nil || res.Passed() {
				t.Errorf("result = %+v, want a failed result", res)
			}
		})
	}
}

func TestRunCapabilityCheckRunsNothing(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - wait: {csiCalls: {contains: [CreateVolume]}}
`)
	cluster := newFakeCluster(clock.RealClock{})
	res, err := (&Runner{Backend: fakeBackend{}}).run(context.Background(), s, cluster.objects)
	if err == nil {
		t.Fatal("no error")
	}
	if n := len(cluster.client.Actions()); n != 0 {
		t.Errorf("%d API calls were made before refusing the scenario", n)
	}
	for _, st := range res.Steps {
		if st.Outcome != NotRun {
			t.Errorf("step %d outcome %s, want not run", st.Step, st.Outcome)
		}
	}
}

func TestRunSkipUnsupportedRunsTheRest(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - assert: {csiCalls: {contains: [CreateVolume]}}
  - assert: {object: pvc/data}
`)
	cluster := newFakeCluster(clock.RealClock{})
	res, err := (&Runner{Backend: fakeBackend{}, SkipUnsupported: true}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Passed, Skipped, Passed}
	for i, st := range res.Steps {
		if st.Outcome != want[i] {
			t.Errorf("step %d outcome %s, want %s", st.Step, st.Outcome, want[i])
		}
	}
	if res.Failed() || res.Passed() {
		t.Errorf("Failed()=%v Passed()=%v, want false, false: a skipped step is neither", res.Failed(), res.Passed())
	}
}

func TestRunIgnoreNotFoundAndApplyUpdate(t *testing.T) {
	s := mustParse(t, `steps:
  - delete: {object: pod/ghost, ignoreNotFound: true}
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {storageClassName: a}}
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {storageClassName: b}}
  - assert: {object: persistentvolumeclaim/data, jsonPath: .spec.storageClassName, equals: b}
`)
	cluster := newFakeCluster(clock.RealClock{})
	res, err := (&Runner{Backend: fakeBackend{}}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	details := []string{res.Steps[0].Detail, res.Steps[1].Detail, res.Steps[2].Detail}
	want := []string{"pod/ghost was already gone", "created PersistentVolumeClaim/data", "updated PersistentVolumeClaim/data"}
	for i := range want {
		if details[i] != want[i] {
			t.Errorf("step %d detail = %q, want %q", i+1, details[i], want[i])
		}
	}
}

func TestRunWaitsForCSICalls(t *testing.T) {
	s := mustParse(t, `steps:
  - wait:
      csiCalls: {contains: [CreateVolume, DeleteVolume], volume: v1}
      timeout: 5s
`)
	sim := &fakeSimulator{}
	go func() {
		for _, c := range []string{"CreateVolume@v1", "CreateVolume@v2", "DeleteVolume@v1"} {
			time.Sleep(5 * time.Millisecond)
			method, vol, _ := strings.Cut(c, "@")
			sim.call(method, vol)
		}
	}()
	r := &Runner{Backend: sim, PollInterval: time.Millisecond}
	if _, err := r.run(context.Background(), s, newFakeCluster(clock.RealClock{}).objects); err != nil {
		t.Fatal(err)
	}
}

func TestRunSleepUsesTheClock(t *testing.T) {
	s := mustParse(t, "steps:\n  - sleep: 1h\n")
	clk := testingclock.NewFakeClock(time.Now())
	r := &Runner{Backend: fakeBackend{}, Clock: clk}
	res, err := runOnFakeClock(t, context.Background(), r, clk, 10*time.Minute, s, newFakeCluster(clk).objects)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps[0].Duration < time.Hour || res.Duration < time.Hour {
		t.Errorf("durations %v / %v, want at least 1h of fake time", res.Steps[0].Duration, res.Duration)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	s := mustParse(t, "steps:\n  - wait: {object: pod/never, timeout: 1h}\n")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	r := &Runner{Backend: fakeBackend{}, PollInterval: time.Millisecond}
	_, err := r.run(ctx, s, newFakeCluster(clock.RealClock{}).objects)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	var serr *StepError
	if !errors.As(err, &serr) || serr.Step != 1 {
		t.Errorf("error = %v, want a StepError for step 1", err)
	}
}

func TestRunRejectsMissingBackend(t *testing.T) {
	if _, err := (&Runner{}).Run(context.Background(), &Scenario{}); err == nil {
		t.Error("Run without a backend succeeded")
	}
}
