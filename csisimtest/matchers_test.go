package csisimtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// fakeTB records a Fatalf instead of ending the test, so that a test can
// check that an assertion fails, and with what message.
type fakeTB struct {
	*testing.T
	fatal []string
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}

// failing returns a copy of c whose failures land in the returned fakeTB.
func failing(t *testing.T, c *Cluster) (*Cluster, *fakeTB) {
	ft := &fakeTB{T: t}
	cc := *c
	cc.t = ft
	return &cc, ft
}

// mismatch asks m once about actual, through c.Expect, and returns the
// failure message; it fails the test if m matched.
func mismatch(t *testing.T, c *Cluster, actual any, m types.GomegaMatcher) string {
	t.Helper()
	cc, ft := failing(t, c)
	if cc.Expect(actual).To(m) {
		t.Fatalf("the matcher matched; want it not to")
	}
	if len(ft.fatal) != 1 {
		t.Fatalf("want one failure, got %q", ft.fatal)
	}
	return ft.fatal[0]
}

func wantAll(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message lacks %q:\n%s", p, msg)
		}
	}
}

// runningWithoutVolume makes a claim the driver provisions and a pod that
// uses it, which the test itself reports Running on a node that does not
// exist: a pod Running without its volume, as a broken kubelet would
// report it.
func runningWithoutVolume(t *testing.T, c *Cluster) (pvc *corev1.PersistentVolumeClaim, fakePod *corev1.Pod) {
	t.Helper()
	objs := c.Apply(strings.Replace(claimAndPod, "spec:\n  containers:", "spec:\n  nodeName: node-nowhere\n  containers:", 1))
	pvc, fakePod = objs[0].(*corev1.PersistentVolumeClaim), objs[1].(*corev1.Pod)
	c.Eventually(pvc).Should(BeBound())
	fakePod.Status.Phase = corev1.PodRunning
	if _, err := c.Client().CoreV1().Pods("default").UpdateStatus(context.Background(), fakePod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pvc, fakePod
}

func TestMatchersFail(t *testing.T) {
	c := Start(t, Options{Seed: 5})
	pvc, pod := runningWithoutVolume(t, c)
	unprovisioned := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr("no-such-class")}}
	unprovisioned.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Mi")}
	c.Apply(unprovisioned)
	missingPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "default"}}
	// Less than a minute: then the pod garbage collector deletes the pod
	// of a node that does not exist.
	c.RunFor(30 * time.Second)

	for _, tc := range []struct {
		name   string
		actual any
		m      types.GomegaMatcher
		want   []string
	}{
		{"BeBound on a pending claim", unprovisioned, BeBound(),
			[]string{"Expected PersistentVolumeClaim default/nowhere to be Bound, but it is Pending"}},
		{"BeBound on a typed claim read without the cluster", func() *corev1.PersistentVolumeClaim { return unprovisioned }, BeBound(),
			[]string{"to be Bound, but it is Pending"}},
		{"BeRunning on a pod Running without its volume", pod, BeRunning(),
			[]string{"Pod default/app to be Running with its volumes set up", `its persistentVolumeClaim volume "data" is not published for it`}},
		{"BeGone on an object that exists", pvc, BeGone(),
			[]string{"PersistentVolumeClaim default/data to be gone, but it still exists"}},
		{"HaveCSICalls out of order", pvc, HaveCSICalls("CreateVolume", "NodeStageVolume"),
			[]string{"to have CSI calls on volume", "to be exactly: CreateVolume, NodeStageVolume", "the calls were: CreateVolume", "missing 1 call(s)"}},
		{"HaveCSICalls on a claim without a volume", unprovisioned, HaveCSICalls("CreateVolume"),
			[]string{"it has no volume yet"}},
		{"ContainCSICalls never made", c, ContainCSICalls("CreateVolume", "DeleteVolume"),
			[]string{"to include, in order: CreateVolume, DeleteVolume", "DeleteVolume not seen after CreateVolume"}},
		{"HaveEvent with another reason", pvc, HaveEvent("ProvisioningFailed"),
			[]string{"to have an Event with reason ProvisioningFailed", "its events were:", "Normal ProvisioningSucceeded"}},
		{"HaveEvent with another message", pvc, HaveEvent("ProvisioningSucceeded", "no such words"),
			[]string{`and a message containing "no such words"`}},
		{"HaveNoInvariantViolations after a pod ran without its volume", c, HaveNoInvariantViolations(),
			[]string{"invariants were violated", "INVARIANT pod-volumes-set-up violated", "pod default/app is Running"}},
		{"BeTerminating on an object not being deleted", pvc, BeTerminating(),
			[]string{"Expected PersistentVolumeClaim default/data to be terminating, but it is not being deleted (it has no deletionTimestamp)"}},
		{"BeTerminating on an object that does not exist", missingPod, BeTerminating(),
			[]string{"Expected Pod default/missing to be terminating, but it does not exist"}},
		{"BeTerminating on a typed nil", func() *corev1.Pod { return nil }, BeTerminating(),
			[]string{"to be terminating, but it does not exist"}},
		{"BeReady on a node that does not exist", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-9"}}, BeReady(),
			[]string{"Expected Node node-9 to be Ready, but it does not exist"}},
		{"BeNotReady on a Ready node", c.Node("node-1"), BeNotReady(),
			[]string{"Expected Node node-1 to be NotReady, but it is Ready since 00:00:00; it has no taints"}},
		{"HaveTaint on a node without taints", c.Node("node-1"), HaveTaint("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute),
			[]string{"Expected Node node-1 to have the taint node.kubernetes.io/unreachable:NoExecute, but it has no taints"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantAll(t, mismatch(t, c, tc.actual, tc.m), tc.want...)
		})
	}
}

func TestMatchersRefuseWhatTheyCannotJudge(t *testing.T) {
	c := Start(t, Options{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	for _, tc := range []struct {
		name   string
		actual any
		m      types.GomegaMatcher
		want   string
	}{
		{"BeRunning on a function's pod", func() *corev1.Pod { return pod }, BeRunning(), "BeRunning needs an object as the cluster holds it"},
		{"BeBound on a pod", pod, BeBound(), "BeBound takes a PersistentVolumeClaim or a PersistentVolume"},
		{"HaveNoInvariantViolations on a pod", pod, HaveNoInvariantViolations(), "takes the Cluster"},
		{"HaveCSICalls on a pod", pod, HaveCSICalls(), "neither"},
		{"BeReady on a pod", pod, BeReady(), "BeReady takes a Node; Pod default/p is not one"},
		{"HaveTaint on a function's pod", func() *corev1.Pod { return pod }, HaveTaint("k"), "HaveTaint takes a Node; got *v1.Pod"},
		{"BeTerminating on a string", func() string { return "p" }, BeTerminating(), "BeTerminating takes an object; got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantAll(t, mismatch(t, c, tc.actual, tc.m), "The last look failed", tc.want)
		})
	}
}

func TestNegatedMatcherMessage(t *testing.T) {
	c := Start(t, Options{})
	pvc := c.Apply(claimAndPod)[0]
	c.Eventually(pvc).Should(BeBound())
	cc, ft := failing(t, c)
	if cc.Expect(pvc).NotTo(BeBound()) {
		t.Fatal("NotTo(BeBound()) held on a bound claim")
	}
	wantAll(t, strings.Join(ft.fatal, "\n"), "Expected PersistentVolumeClaim default/data not to be Bound, but it is Bound to pvc-")
}

func TestEventuallyTimesOutInVirtualTime(t *testing.T) {
	c := Start(t, Options{})
	missing := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "never", Namespace: "default"}}
	cc, ft := failing(t, c)
	before, wallBefore := c.Now(), time.Now()
	if cc.Eventually(missing).WithTimeout(10*time.Minute).Should(BeBound(), "waiting for claim %s", "never") {
		t.Fatal("Eventually held for a claim that does not exist")
	}
	if got := c.Now().Sub(before); got < 10*time.Minute {
		t.Errorf("the virtual clock moved %s; want the whole timeout, 10m", got)
	}
	if wall := time.Since(wallBefore); wall > 20*time.Second {
		t.Errorf("10 virtual minutes took %s of wall time", wall)
	}
	wantAll(t, strings.Join(ft.fatal, "\n"), "waiting for claim never", "Timed out after 10m0s of virtual time",
		"PersistentVolumeClaim default/never to be Bound, but it does not exist")
}

func TestConsistentlyFailsWhenTheMatcherStopsHolding(t *testing.T) {
	c := Start(t, Options{})
	pvc := c.Apply(claimAndPod)[0]
	cc, ft := failing(t, c)
	if cc.Consistently(pvc).ShouldNot(BeBound()) {
		t.Fatal("Consistently(...).ShouldNot(BeBound()) held for a claim that gets bound")
	}
	wantAll(t, strings.Join(ft.fatal, "\n"), "of Consistently", "not to be Bound, but it is Bound")
}

func ptr[T any](v T) *T { return &v }
