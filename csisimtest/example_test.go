package csisimtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/csisimtest"
	"github.com/csisim/csisim/fault"
)

// TestVolume is the package doc's first test (readme_test.go checks that
// the doc shows it as it is here).
func TestVolume(t *testing.T) {
	c := csisimtest.Start(t, csisimtest.Options{Seed: 1})
	objs := c.Apply(`
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`)
	pvc, pod := objs[0].(*corev1.PersistentVolumeClaim), objs[1].(*corev1.Pod)
	c.Eventually(pod).Should(csisimtest.BeRunning())
	c.Expect(pvc).To(csisimtest.HaveCSICalls("CreateVolume",
		"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	c.Expect(c).To(csisimtest.HaveNoInvariantViolations())
}

// claimAndPod is a claim of the driver's default StorageClass and a pod
// that mounts it.
const claimAndPod = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`

func ExampleCluster_Apply() {
	t := newExampleT() // in a test: its *testing.T, or Ginkgo's GinkgoT()
	defer t.end()

	c := csisimtest.Start(t, csisimtest.Options{Seed: 1})
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"size": "1Gi"}}
	objs := c.Apply(claimAndPod, settings)
	for _, o := range objs {
		fmt.Printf("%T %s/%s\n", o, o.GetNamespace(), o.GetName())
	}
	// A typed object handed in is updated in place with what was stored.
	fmt.Println("settings has a UID:", settings.UID != "")

	pvc := objs[0].(*corev1.PersistentVolumeClaim)
	c.Eventually(pvc).Should(csisimtest.BeBound())
	// Eventually reads the cluster; Refresh reads it into pvc.
	fmt.Println("before Refresh:", pvc.Status.Phase)
	c.Refresh(pvc)
	fmt.Println("after Refresh:", pvc.Status.Phase)
	// Output:
	// *v1.PersistentVolumeClaim default/data
	// *v1.Pod default/app
	// *v1.ConfigMap default/settings
	// settings has a UID: true
	// before Refresh: Pending
	// after Refresh: Bound
}

func ExampleCluster_Eventually() {
	t := newExampleT() // in a test: its *testing.T, or Ginkgo's GinkgoT()
	defer t.end()

	c := csisimtest.Start(t, csisimtest.Options{Seed: 1})
	pvc := c.Apply(claimAndPod)[0].(*corev1.PersistentVolumeClaim)
	// Gomega's own matchers get the typed claim, read afresh each look.
	c.Eventually(pvc).Should(HaveField("Status.Phase", corev1.ClaimBound))

	// An hour of the cluster's time, in no time of yours.
	wall, started := time.Now(), c.Now()
	c.Consistently(pvc).WithTimeout(time.Hour).Should(csisimtest.BeBound())
	fmt.Println("virtual time passed:", c.Now().Sub(started))
	fmt.Println("under a minute of wall time:", time.Since(wall) < time.Minute)
	// Output:
	// virtual time passed: 1h0m0s
	// under a minute of wall time: true
}

func ExampleBeNotReady() {
	t := newExampleT() // in a test: its *testing.T, or Ginkgo's GinkgoT()
	defer t.end()

	c := csisimtest.Start(t, csisimtest.Options{Seed: 1, Nodes: 2})
	c.InjectFault(fault.Fault{Kind: fault.NodeLoss, Node: "node-2"})
	node := c.Node("node-2")
	c.Eventually(node).Should(csisimtest.BeNotReady())
	c.Eventually(node).Should(csisimtest.HaveTaint("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute))
	c.Expect(c.Node("node-1")).To(csisimtest.BeReady())

	c.Refresh(node)
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			fmt.Println(cond.Type, cond.Status, cond.Reason)
		}
	}
	for _, taint := range node.Spec.Taints {
		fmt.Println(taint.ToString())
	}
	// Output:
	// Ready Unknown NodeStatusUnknown
	// node.kubernetes.io/unreachable:NoSchedule
	// node.kubernetes.io/unreachable:NoExecute
}

func ExampleCluster_ForceDelete() {
	t := newExampleT() // in a test: its *testing.T, or Ginkgo's GinkgoT()
	defer t.end()

	c := csisimtest.Start(t, csisimtest.Options{Seed: 1})
	pod := c.Apply(claimAndPod)[1].(*corev1.Pod)
	c.Eventually(pod).Should(csisimtest.BeRunning())
	// Its node is lost: no kubelet is left to finish the pod's deletion.
	c.InjectFault(fault.Fault{Kind: fault.NodeLoss, Node: "node-1"})
	c.Eventually(c.Node("node-1")).Should(csisimtest.BeNotReady())

	c.Delete(pod)
	c.Consistently(pod).WithTimeout(10 * time.Minute).Should(csisimtest.BeTerminating())
	c.Refresh(pod)
	fmt.Println("deleted, and still", pod.Status.Phase)

	c.ForceDelete(pod)
	c.Expect(pod).To(csisimtest.BeGone())
	fmt.Println("gone")
	// Output:
	// deleted, and still Running
	// gone
}

// exampleT is what these examples, which Go runs outside any test, have
// for a test's *testing.T.
type exampleT struct {
	ctx      context.Context
	cancel   context.CancelFunc
	cleanups []func()
	failed   bool
}

func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                    {}
func (t *exampleT) Context() context.Context   { return t.ctx }
func (t *exampleT) Cleanup(f func())           { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Failed() bool               { return t.failed }
func (t *exampleT) Logf(f string, args ...any) { fmt.Fprintf(os.Stderr, f+"\n", args...) }

// Fatalf fails the example: its panic ends it, and the test binary.
func (t *exampleT) Fatalf(format string, args ...any) {
	t.failed = true
	panic(fmt.Sprintf(format, args...))
}

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "csisimtest-example-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// end ends the example as a test ends: its context is cancelled, then its
// cleanups run, the last registered first.
func (t *exampleT) end() {
	if r := recover(); r != nil {
		t.failed = true
		defer panic(r)
	}
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
