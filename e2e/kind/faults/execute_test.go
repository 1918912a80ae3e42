package faults

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/csisim/csisim/fault"
)

// fakeRunner records commands and fails the ones fail says.
type fakeRunner struct {
	ran  [][]string
	fail func(argv []string) ([]byte, error)
}

func (r *fakeRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	r.ran = append(r.ran, argv)
	if r.fail != nil {
		return r.fail(argv)
	}
	return nil, nil
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func node(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"}}},
	}
}

func pluginPod(name, nodeName, component string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "csisim", Labels: map[string]string{
			"app.kubernetes.io/part-of": "csisim", "app.kubernetes.io/component": component}},
		Spec: corev1.PodSpec{NodeName: nodeName},
	}
}

func newKind(objs ...runtime.Object) (*Kind, *fakeRunner, *fake.Clientset, *bytes.Buffer) {
	client := fake.NewClientset(objs...)
	runner := &fakeRunner{}
	log := &bytes.Buffer{}
	k := testKind()
	k.Client, k.Runner, k.Log = client, runner, log
	k.PollInterval = time.Millisecond
	k.Now = func() time.Time { return t0 }
	return k, runner, client, log
}

func TestInjectNodeLossRunsDocker(t *testing.T) {
	k, runner, _, log := newKind()
	if err := k.InjectFault(context.Background(), fault.Fault{Kind: fault.NodeLoss, Node: "csisim-e2e-worker"}); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"docker", "kill", "csisim-e2e-worker"}}; !reflect.DeepEqual(runner.ran, want) {
		t.Errorf("ran %q, want %q", runner.ran, want)
	}
	if got := log.String(); got != "fault: docker kill csisim-e2e-worker\n" {
		t.Errorf("log %q", got)
	}
}

func TestInjectStopsAtFailingCommand(t *testing.T) {
	k, runner, _, _ := newKind()
	runner.fail = func(argv []string) ([]byte, error) {
		return []byte("Error response from daemon: No such container: csisim-e2e-worker\n"), errors.New("exit status 1")
	}
	err := k.InjectFault(context.Background(), fault.Fault{Kind: fault.NodeReturn, Node: "csisim-e2e-worker"})
	if err == nil {
		t.Fatal("InjectFault succeeded although docker start failed")
	}
	for _, want := range []string{
		"fault node-return on csisim-e2e-worker: action 1 of 2", "docker start csisim-e2e-worker",
		"exit status 1", "No such container",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if len(runner.ran) != 1 {
		t.Errorf("ran %d commands after the failing one, want it to stop: %q", len(runner.ran)-1, runner.ran)
	}
}

func TestInjectNodeReturnWaitsForReady(t *testing.T) {
	k, runner, client, _ := newKind(node("csisim-e2e-worker", corev1.ConditionUnknown))
	// The node becomes Ready once docker start has run.
	runner.fail = func(argv []string) ([]byte, error) {
		n := node("csisim-e2e-worker", corev1.ConditionTrue)
		_, err := client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return nil, err
	}
	if err := k.InjectFault(context.Background(), fault.Fault{Kind: fault.NodeReturn, Node: "csisim-e2e-worker"}); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"docker", "start", "csisim-e2e-worker"}}; !reflect.DeepEqual(runner.ran, want) {
		t.Errorf("ran %q, want %q", runner.ran, want)
	}
}

func TestExecuteWaitTimesOut(t *testing.T) {
	k, _, _, _ := newKind(node("csisim-e2e-worker", corev1.ConditionUnknown))
	err := k.Execute(context.Background(), []Action{WaitNodeReady{Node: "csisim-e2e-worker", Status: corev1.ConditionTrue, Timeout: 50 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "last seen: Ready=Unknown (KubeletReady)") {
		t.Fatalf("Execute = %v, want a timeout that says what it saw", err)
	}
}

func TestInjectOutOfServiceTaints(t *testing.T) {
	other := corev1.Taint{Key: "example.com/keep", Effect: corev1.TaintEffectNoSchedule}
	k, runner, client, _ := newKind(node("csisim-e2e-worker", corev1.ConditionUnknown, other))
	ctx := context.Background()
	f := fault.Fault{Kind: fault.OutOfService, Node: "csisim-e2e-worker"}
	for range 2 { // twice: the second is a no-op, not a second taint
		if err := k.InjectFault(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "csisim-e2e-worker", metav1.GetOptions{})
	want := []corev1.Taint{other, {Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}}
	if !reflect.DeepEqual(n.Spec.Taints, want) {
		t.Errorf("taints after out-of-service:\n %+v\nwant\n %+v", n.Spec.Taints, want)
	}
	untaint := UntaintNode{Node: "csisim-e2e-worker", Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute}
	if err := k.Execute(ctx, []Action{untaint, untaint}); err != nil {
		t.Fatal(err)
	}
	n, _ = client.CoreV1().Nodes().Get(ctx, "csisim-e2e-worker", metav1.GetOptions{})
	if !reflect.DeepEqual(n.Spec.Taints, []corev1.Taint{other}) {
		t.Errorf("taints after untainting: %+v, want only %+v", n.Spec.Taints, other)
	}
	if len(runner.ran) != 0 {
		t.Errorf("out-of-service ran commands: %q", runner.ran)
	}
	if err := k.InjectFault(ctx, fault.Fault{Kind: fault.OutOfService, Node: "csisim-e2e-worker2"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("out-of-service on a node the API does not know: %v", err)
	}
}

func TestInjectDriverRestartOfTheController(t *testing.T) {
	k, _, client, _ := newKind(
		pluginPod("csisim-node-a", "csisim-e2e-worker", "node"),
		pluginPod("csisim-controller-x", "csisim-e2e-worker", "controller"),
	)
	ctx := context.Background()
	f := fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Controller}
	if err := k.InjectFault(ctx, f); err != nil {
		t.Fatal(err)
	}
	pods, _ := client.CoreV1().Pods("csisim").List(ctx, metav1.ListOptions{})
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if want := []string{"csisim-node-a"}; !reflect.DeepEqual(left, want) {
		t.Errorf("pods left %v, want %v", left, want)
	}
	// Nothing left to restart: that is an error, not a silent no-op.
	if err := k.InjectFault(ctx, f); err == nil || !strings.Contains(err.Error(), "no pod matches client-go: delete pods -n csisim") {
		t.Errorf("second driver-restart: %v", err)
	}
}

func TestInjectStaleVolumeAttachment(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csisim.io", VolumeHandle: "vol-1"}}}}
	k, _, client, _ := newKind(claim, pv)
	ctx := context.Background()
	if err := k.InjectFault(ctx, fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "gone-node", Claim: "data"}); err != nil {
		t.Fatal(err)
	}
	vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vas.Items) != 1 {
		t.Fatalf("%d VolumeAttachments, want 1", len(vas.Items))
	}
	va := vas.Items[0]
	if va.Spec.Attacher != "hostpath.csisim.io" || va.Spec.NodeName != "gone-node" || va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != "pv-1" {
		t.Errorf("VolumeAttachment spec %+v", va.Spec)
	}
}

func TestExecuteWithoutClient(t *testing.T) {
	k := testKind()
	k.Runner = &fakeRunner{}
	err := k.InjectFault(context.Background(), fault.Fault{Kind: fault.OutOfService, Node: "csisim-e2e-worker"})
	if err == nil || !strings.Contains(err.Error(), "no Kubernetes client") {
		t.Errorf("InjectFault without a client: %v", err)
	}
}

func TestExecRunner(t *testing.T) {
	out, err := ExecRunner{}.Run(context.Background(), []string{"sh", "-c", "echo out; echo err >&2; exit 3"})
	if err == nil || string(out) != "out\nerr\n" {
		t.Errorf("Run = %q, %v; want combined output and an error", out, err)
	}
	if _, err := (ExecRunner{}).Run(context.Background(), nil); err == nil {
		t.Error("Run(nil) succeeded")
	}
}

// TestUndoFaults: a node lost and not returned is started again and waited
// for, an out-of-service taint taken off; a node returned by the scenario
// is left alone, and a second UndoFaults does nothing.
func TestUndoFaults(t *testing.T) {
	oos := fault.OutOfServiceTaint(t0)
	k, runner, client, _ := newKind(
		node("csisim-e2e-worker", corev1.ConditionTrue, oos),
		node("csisim-e2e-worker2", corev1.ConditionTrue),
	)
	ctx := context.Background()
	for _, f := range []fault.Fault{
		{Kind: fault.NodeLoss, Node: "csisim-e2e-worker"},
		{Kind: fault.NodeLoss, Node: "csisim-e2e-worker2"},
		{Kind: fault.NodeReturn, Node: "csisim-e2e-worker2"},
		{Kind: fault.OutOfService, Node: "csisim-e2e-worker"},
	} {
		if err := k.InjectFault(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	runner.ran = nil
	if err := k.UndoFaults(ctx); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"docker", "start", "csisim-e2e-worker"}}; !reflect.DeepEqual(runner.ran, want) {
		t.Errorf("ran %q, want %q", runner.ran, want)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "csisim-e2e-worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Errorf("taints after the undo: %v, want none", n.Spec.Taints)
	}
	runner.ran = nil
	if err := k.UndoFaults(ctx); err != nil || len(runner.ran) != 0 {
		t.Errorf("second undo: ran %q, err %v; want nothing", runner.ran, err)
	}
}
