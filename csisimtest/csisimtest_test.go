package csisimtest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// claimAndPod is a claim of the driver's default class and a pod that
// mounts it.
const claimAndPod = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`

func TestProvisionMountDelete(t *testing.T) {
	c := Start(t, Options{Seed: 1})
	objs := c.Apply(claimAndPod)
	if len(objs) != 2 {
		t.Fatalf("Apply returned %d objects, want 2", len(objs))
	}
	pvc, pod := objs[0], objs[1]

	started := time.Now()
	c.Eventually(pvc).Should(BeBound())
	c.Eventually(pod).Should(BeRunning())
	c.Expect(pvc).To(HaveEvent("ProvisioningSucceeded", "Successfully provisioned"))
	c.Expect(pvc).To(HaveCSICalls("CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	// Gomega's own matchers get the object as it was handed over.
	typedClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}}
	c.Expect(typedClaim).To(gomega.HaveField("Status.Phase", corev1.ClaimBound))
	c.Expect(c).To(HaveNoInvariantViolations())

	c.Delete(pod, pvc)
	c.Eventually(pod).Should(BeGone())
	c.Eventually(pvc).Should(BeGone())
	c.Eventually(pvc).Should(ContainCSICalls("NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume"))
	c.Expect(c).To(HaveNoInvariantViolations())
	if wall := time.Since(started); wall > 30*time.Second {
		t.Errorf("the waits took %s of wall time; they should cost virtual time", wall)
	}
}

func TestCSIFaultAndRecovery(t *testing.T) {
	c := Start(t, Options{Seed: 2})
	c.InjectFault(fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Internal, Message: "disk on fire"}})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pvc).Should(BeBound())
	c.Consistently(pod).WithTimeout(time.Minute).ShouldNot(BeRunning())
	c.Expect(pod).To(HaveEvent("FailedMount", "disk on fire"))

	c.InjectFault(fault.Fault{Kind: fault.CSIHeal, CSI: fault.CSI{Method: "NodeStageVolume"}})
	c.Eventually(pod).Should(BeRunning())
	c.Expect(pvc).To(ContainCSICalls("NodeStageVolume", "NodeStageVolume", "NodePublishVolume"))
	c.Expect(c).To(HaveNoInvariantViolations())
}

// A lost CreateVolume answer: the driver made the volume, the provisioner
// heard DeadlineExceeded after its 10 s timeout and asked again, and the
// driver's idempotence gave it the same volume.
func TestCSILostAnswer(t *testing.T) {
	c := Start(t, Options{Seed: 3})
	c.InjectFault(fault.Fault{Kind: fault.CSILostAnswer, Times: 1, CSI: fault.CSI{Method: "CreateVolume", FirstAttempt: true}})
	start := c.Now()
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	c.Expect(pvc).To(HaveCSICalls("CreateVolume", "CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	var created []string
	lost := 0
	for _, e := range c.Timeline() {
		switch {
		case e.Kind == trace.CSI && e.Verb == "CreateVolume":
			created = append(created, e.Call.Code.String()+" "+e.Call.Volume)
		case e.Kind == trace.Fault && e.Verb == "CreateVolume" && e.Call != nil:
			lost++
			created = append([]string{"lost " + e.Call.Volume}, created...)
		}
	}
	if len(created) != 3 || lost != 1 || created[1] != "DeadlineExceeded " || created[2] != "OK "+strings.TrimPrefix(created[0], "lost ") {
		t.Errorf("CreateVolume: %q; want the lost answer's volume, DeadlineExceeded, then OK with the same volume", created)
	}
	if waited := c.Now().Sub(start); waited < 10*time.Second {
		t.Errorf("the pod ran %s after the claim; the lost answer should cost the provisioner's 10 s timeout", waited)
	}
	c.Expect(c).To(HaveNoInvariantViolations())
}

// The controller plugin dies after making the volume of the first
// CreateVolume: the provisioner hears Unavailable, the driver is started
// again, and the retry gets the same volume.
func TestDriverCrashMidCall(t *testing.T) {
	c := Start(t, Options{Seed: 3})
	c.InjectFault(fault.Fault{Kind: fault.DriverCrashMidCall, Times: 1, CSI: fault.CSI{Method: "CreateVolume"}})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	c.Expect(pvc).To(HaveCSICalls("CreateVolume", "CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	var created []string
	crashed := 0
	for _, e := range c.Timeline() {
		switch {
		case e.Kind == trace.CSI && e.Verb == "CreateVolume":
			created = append(created, e.Call.Code.String()+" "+e.Call.Volume)
		case e.Kind == trace.Fault && e.Verb == "CreateVolume" && e.Call != nil:
			created = append(created, "lost "+e.Call.Volume)
		case e.Kind == trace.Fault && e.Verb == "driver-crashed" && e.Err == "":
			crashed++
		}
	}
	if len(created) != 3 || crashed != 1 || created[1] != "Unavailable " || created[2] != "OK "+strings.TrimPrefix(created[0], "lost ") {
		t.Errorf("CreateVolume: %q, %d crashes; want the lost answer's volume, Unavailable, then OK with the same volume, and one crash", created, crashed)
	}
	c.Expect(c).To(HaveNoInvariantViolations())
}

// A restarted provisioner asks the driver again and goes on with the
// claims it lists: the claim made before the restart is provisioned once.
func TestSidecarRestart(t *testing.T) {
	c := Start(t, Options{Seed: 3})
	c.InjectFault(fault.Fault{Kind: fault.SidecarRestart, Component: "external-provisioner"})
	objs := c.Apply(claimAndPod)
	c.Eventually(objs[1]).Should(BeRunning())
	var asked []string
	for _, e := range c.Timeline() {
		if e.Kind == trace.CSI && e.Actor == "external-provisioner" {
			asked = append(asked, e.Verb)
		}
	}
	// At start, the name and capabilities; again after the restart; then
	// the one CreateVolume.
	want := []string{"GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities",
		"GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "CreateVolume"}
	if !slices.Equal(asked, want) {
		t.Errorf("external-provisioner's calls: %q, want %q", asked, want)
	}
	c.Expect(c).To(HaveNoInvariantViolations())
}

func TestApplyTypedObjectIsUpdatedInPlace(t *testing.T) {
	c := Start(t, Options{})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "typed"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Mi")}
	c.Apply(pvc)
	if pvc.UID == "" || pvc.Namespace != "default" {
		t.Fatalf("after Apply the claim has UID %q, namespace %q; want the stored ones", pvc.UID, pvc.Namespace)
	}
	c.Eventually(pvc).Should(BeBound())
	// The Client sees what the matchers see.
	got, err := c.Client().CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "typed", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.ClaimBound {
		t.Fatalf("Client: claim %v, err %v; want Bound", got.Status.Phase, err)
	}
}

func TestSameSeedSameTimeline(t *testing.T) {
	run := func() []string {
		c := Start(t, Options{Seed: 42, Nodes: 2})
		pod := c.Apply(claimAndPod)[1]
		c.Eventually(pod).Should(BeRunning())
		var out []string
		for _, e := range c.Timeline() {
			out = append(out, e.Canonical())
		}
		return out
	}
	a, b := run(), run()
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("same seed, different timelines at entry %d:\n  %s\n  %s", i+1, a[i], b[i])
			}
		}
		t.Fatalf("same seed, timelines of %d and %d entries", len(a), len(b))
	}
}

func TestClustersAreIndependent(t *testing.T) {
	a, b := Start(t, Options{Seed: 3}), Start(t, Options{Seed: 3})
	if a.sim.Root() == b.sim.Root() {
		t.Fatalf("two clusters share the root %s", a.sim.Root())
	}
	podA := a.Apply(claimAndPod)[1]
	a.Eventually(podA).Should(BeRunning())
	// b saw none of it, and its clock did not move.
	b.Expect(podA).To(BeGone())
	if !b.Now().Before(a.Now()) {
		t.Fatalf("b's clock is at %s, a's at %s: they should be separate", b.Now(), a.Now())
	}
}

func TestStartRefusesUnknownProfile(t *testing.T) {
	ft := &fakeTB{T: t}
	if _, err := start(ft, Options{Driver: "no-such-driver"}); err == nil || !strings.Contains(err.Error(), "no such shipped profile") {
		t.Fatalf("start: error %v, want one listing the shipped profiles", err)
	}
}

// TestCSITestMockDriver runs kubernetes-csi/csi-test's mock driver, a real
// third-party driver process, from its shipped profile (built once into
// the user's cache through the module proxy).
func TestCSITestMockDriver(t *testing.T) {
	c := Start(t, Options{Driver: "csi-test-mock", Seed: 4})
	if c.DriverName() != "io.kubernetes.storage.mock" {
		t.Fatalf("driver name %q, want the mock's own", c.DriverName())
	}
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	c.Expect(pvc).To(HaveCSICalls("CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	c.Delete(pod, pvc)
	c.Eventually(pvc).Should(BeGone())
	c.Eventually(pvc).Should(ContainCSICalls("NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume"))
	c.Expect(c).To(HaveNoInvariantViolations())
}

// TestCSISimDriver runs csisim's own driver, built for the test, which
// mounts for real: BeRunning then also wants the volume mounted where it
// was published. Needs root, as csisim's driver does.
func TestCSISimDriver(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("csisim's driver mounts: needs root")
	}
	c := Start(t, Options{Driver: "csisim", Seed: 6})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	mounts, err := c.sim.KubeletMounts()
	if err != nil || len(mounts) == 0 {
		t.Fatalf("the kubelet's mounts: %v, %v; want the pod's volume mounted", mounts, err)
	}
	c.Delete(pod, pvc)
	c.Eventually(pvc).Should(BeGone())
	c.Eventually(pvc).Should(ContainCSICalls("NodeUnpublishVolume", "NodeUnstageVolume", "DeleteVolume"))
	c.Expect(c).To(HaveNoInvariantViolations())
}

func TestPrepare(t *testing.T) {
	if err := Prepare(t.Context(), "csi-test-mock"); err != nil {
		t.Fatalf("Prepare(csi-test-mock): %v", err)
	}
	if err := Prepare(t.Context(), "no-such-driver"); err == nil || !strings.Contains(err.Error(), "no such shipped profile") {
		t.Fatalf("Prepare(no-such-driver): error %v, want one naming the shipped profiles", err)
	}
}

func TestApplyReturnsTypedObjects(t *testing.T) {
	c := Start(t, Options{Seed: 8})
	objs := c.Apply(claimAndPod, `
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: snapshots}
driver: hostpath.csisim.io
deletionPolicy: Delete
`)
	pvc, ok := objs[0].(*corev1.PersistentVolumeClaim)
	if !ok {
		t.Fatalf("Apply returned the claim as a %T, want *corev1.PersistentVolumeClaim", objs[0])
	}
	if _, ok := objs[1].(*corev1.Pod); !ok {
		t.Fatalf("Apply returned the pod as a %T, want *corev1.Pod", objs[1])
	}
	// A kind client-go does not know stays unstructured.
	if u, ok := objs[2].(*unstructured.Unstructured); !ok || u.Object["driver"] != "hostpath.csisim.io" {
		t.Fatalf("Apply returned the VolumeSnapshotClass as %#v, want an *unstructured.Unstructured with its driver", objs[2])
	}
	// An unstructured object handed in comes back as itself.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"}, "data": map[string]any{"a": "1"}}}
	if got := c.Apply(u); len(got) != 1 || got[0] != u || u.GetUID() == "" {
		t.Fatalf("Apply(unstructured) returned %v (UID %q); want the object itself, with its UID", got, u.GetUID())
	}

	c.Eventually(pvc).Should(gomega.HaveField("Status.Phase", corev1.ClaimBound))
	if pvc.Spec.VolumeName != "" {
		t.Fatalf("Eventually changed the claim it was handed (volume %q); only Refresh should", pvc.Spec.VolumeName)
	}
	c.Refresh(pvc)
	if pvc.Status.Phase != corev1.ClaimBound || !strings.HasPrefix(pvc.Spec.VolumeName, "pvc-") {
		t.Fatalf("after Refresh the claim is %s with volume %q; want Bound to its pvc-... volume", pvc.Status.Phase, pvc.Spec.VolumeName)
	}

	// Delete takes what Apply returned as it is.
	c.Delete(append(objs, u)...)
	cc, ft := failing(t, c)
	cc.Refresh(u)
	wantAll(t, strings.Join(ft.fatal, "\n"), "csisimtest: Refresh: ConfigMap default/settings does not exist")
}

// The CSI call matchers expect what follows from the test on the driver
// that runs: on a driver without attach and stage (csisim-file), a pod's
// volume gets no ControllerPublishVolume and no NodeStageVolume, and the
// lifecycle as a block driver has it still matches; a sequence that is
// wrong for any driver still fails, saying which calls were left out.
func TestCSICallMatchersFitTheDriver(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("csisim's driver mounts: needs root")
	}
	c := Start(t, Options{Driver: "csisim-file", Seed: 6})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	c.Delete(pod, pvc)
	c.Eventually(pvc).Should(BeGone())
	lifecycle := []string{"CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
		"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume"}
	c.Eventually(pvc).Should(HaveCSICalls(lifecycle...))

	observed, err := c.handOver(pvc)
	if err != nil {
		t.Fatal(err)
	}
	wrong := HaveCSICalls("CreateVolume", "NodeStageVolume", "DeleteVolume", "DeleteVolume")
	if ok, err := wrong.Match(observed); ok || err != nil {
		t.Fatalf("a wrong sequence matched: %v, %v", ok, err)
	}
	if msg := wrong.FailureMessage(observed); !strings.Contains(msg, "(no NodeStageVolume: ") {
		t.Errorf("the failure does not say NodeStageVolume was left out:\n%s", msg)
	}
}

// While the API server is down nothing is provisioned; when it is back the
// components' reflectors list again and the pod runs, with one volume.
func TestAPIServerDown(t *testing.T) {
	c := Start(t, Options{Seed: 5})
	objs := c.Apply(claimAndPod)
	c.InjectFault(fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}})
	c.RunFor(25 * time.Second)
	c.Refresh(objs[0])
	created := func() int {
		return len(slices.DeleteFunc(c.CSICalls(), func(e trace.Entry) bool { return e.Verb != "CreateVolume" }))
	}
	if pvc := objs[0].(*corev1.PersistentVolumeClaim); pvc.Status.Phase != corev1.ClaimPending || created() != 0 {
		t.Fatalf("while the API server is down: claim %s, %d CreateVolume; want Pending and none", pvc.Status.Phase, created())
	}
	c.Eventually(objs[1]).Should(BeRunning())
	if created() != 1 {
		t.Errorf("%d CreateVolume, want 1", created())
	}
	var faults []string
	for _, e := range c.Timeline() {
		if e.Kind == trace.Fault && strings.HasPrefix(e.Verb, "api-server-down") {
			faults = append(faults, fmt.Sprintf("%s at %s", e.Verb, e.At))
		}
	}
	if want := []string{"api-server-down at 0s", "api-server-down ended at 30s"}; !slices.Equal(faults, want) {
		t.Errorf("timeline: %q, want %q", faults, want)
	}
	c.Expect(c).To(HaveNoInvariantViolations())
}

// A throttled component's client-go waits Retry-After (virtual time) and
// retries; the claim binds after the waits, with no error it had to see.
func TestAPIThrottle(t *testing.T) {
	c := Start(t, Options{Seed: 5})
	c.InjectFault(fault.Fault{Kind: fault.APIThrottle, Component: "external-provisioner", Times: 4, API: fault.API{RetryAfter: 5 * time.Second}})
	objs := c.Apply(claimAndPod)
	c.Eventually(objs[1]).Should(BeRunning())
	var provisioned time.Duration
	for _, e := range c.Timeline() {
		if e.Kind == trace.CSI && e.Verb == "CreateVolume" {
			provisioned = e.At
		}
	}
	if provisioned < 20*time.Second {
		t.Errorf("CreateVolume at %s, want after the provisioner's four 5 s waits", provisioned)
	}
	c.Expect(c).To(HaveNoInvariantViolations())
}

// TestHealthMonitor: asked for, the external-health-monitor runs beside
// csisim's driver, which reports volume health: its list of every
// volume's health comes each 5 minutes of virtual time, sees the volume
// go DEGRADED, and writes the claim's health status — which the API
// server drops, the alpha gate being off — while the pod keeps running.
// Not asked for, no one asks the driver. Needs root, as csisim's driver
// does.
func TestHealthMonitor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("csisim's driver mounts: needs root")
	}
	listed := func(c *Cluster) int {
		n := 0
		for _, e := range c.CSICalls() {
			if e.Verb == "ControllerListVolumeHealth" {
				n++
			}
		}
		return n
	}
	for _, asked := range []bool{false, true} {
		c := Start(t, Options{Driver: "csisim", Seed: 3, HealthMonitor: asked})
		objs := c.Apply(claimAndPod)
		pvc, pod := objs[0], objs[1]
		c.Eventually(pod).Should(BeRunning())
		c.InjectFault(fault.Fault{Kind: fault.VolumeHealth, Claim: "data",
			Health: fault.Health{Status: "DEGRADED", Reason: "ReplicaLost", Message: "a replica is lost"}})
		c.Consistently(pod).WithTimeout(11 * time.Minute).Should(BeRunning())
		if got := listed(c); asked && got < 2 || !asked && got != 0 {
			t.Errorf("HealthMonitor %v: %d ControllerListVolumeHealth calls in 11 minutes, want %s", asked, got,
				map[bool]string{true: "at least 2 (one each 5 minutes)", false: "none"}[asked])
		}
		c.Expect(pvc).To(gomega.HaveField("Status.HealthStatus", gomega.BeNil()))
	}
}
