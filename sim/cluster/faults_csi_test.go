package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// startPod creates the pod app on node-1 using claim data-0.
func startPod(ctx context.Context, c *Cluster) error {
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}}}
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func podRunning(ctx context.Context, c *Cluster) func() (bool, error) {
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	return func() (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	}
}

func TestAHungStageCostsTheKubeletsTimeoutInVirtualTime(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := provisionClaims(ctx, c, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	hang := fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "NodeStageVolume"}, Times: 1}
	if err := c.InjectFault(ctx, hang); err != nil {
		t.Fatal(err)
	}
	if err := startPod(ctx, c); err != nil {
		t.Fatal(err)
	}
	start, wall := c.Clock().Now(), time.Now()
	if err := c.RunUntil(ctx, 10*time.Minute, podRunning(ctx, c)); err != nil {
		t.Fatal(err)
	}
	t.Logf("the pod ran after %s of cluster time, %s of wall time", c.Clock().Since(start), time.Since(wall))
	var stages []trace.Entry
	var fired *trace.Entry
	entries := c.Recorder().Entries()
	for i, e := range entries {
		if e.Kind == trace.CSI && e.Verb == "NodeStageVolume" {
			stages = append(stages, e)
		}
		if e.Kind == trace.Fault && e.Actor == "faultproxy:node-1" && e.Verb == "NodeStageVolume" {
			fired = &entries[i]
		}
	}
	if fired == nil || len(stages) != 2 || stages[0].Detail != "DeadlineExceeded" || stages[1].Detail != "OK" {
		t.Fatalf("NodeStageVolume calls: %v (fault fired: %v), want one DeadlineExceeded then one OK", stages, fired)
	}
	// A CSI entry is written when the call ends: the hung call ended the
	// kubelet's 2 minutes after the fault caught it, on the virtual clock,
	// and the retry came after the kubelet's first backoff, 500 ms.
	if took := stages[0].At - fired.At; took != 2*time.Minute {
		t.Errorf("the hung call took %s, want the kubelet's timeout, 2m0s", took)
	}
	if retry := stages[1].At - stages[0].At; retry != 500*time.Millisecond {
		t.Errorf("the retry came %s after the timeout, want 500ms", retry)
	}
	renewals := 0
	for _, e := range entries {
		if e.Kind == trace.API && e.Object == "Lease kube-node-lease/node-1" && e.At > fired.At && e.At < stages[0].At {
			renewals++
		}
	}
	if renewals < 11 {
		t.Errorf("the node renewed its lease %d times while its stage call hung for 2 minutes, want one every 10 s", renewals)
	}
}

func TestDriverCrashAndRestart(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), DriverBinary: csisimBinary, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Controller}); err != nil {
		t.Fatal(err)
	}
	if err := provisionClaims(ctx, c, 1, 5*time.Second); err == nil {
		t.Fatal("a claim was provisioned while the controller plugin was down")
	}
	var unavailable bool
	for _, e := range c.CSICalls() {
		unavailable = unavailable || (e.Actor == "external-provisioner" && e.Detail == "Unavailable")
	}
	if !unavailable {
		t.Errorf("the provisioner's calls did not fail with Unavailable while the plugin was down: %v", c.CSICalls())
	}
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Controller}); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	if err := c.RunUntil(ctx, time.Minute, func() (bool, error) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-0", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, err
	}); err != nil {
		t.Fatalf("the claim was not bound after the restart: %v", err)
	}
}

// BenchmarkTenMinuteHang: ControllerPublishVolume hangs for ten minutes of
// cluster time (every attach until csi-heal; the external-attacher times
// out after 15 s each time and backs off), then the pod runs. It reports
// the wall time that costs.
func BenchmarkTenMinuteHang(b *testing.B) {
	onBothDrivers(b, 1, hangTenMinutes, "wall-ms/10min-hang", func(d time.Duration) float64 { return d.Seconds() * 1000 })
}

func hangTenMinutes(ctx context.Context, c *Cluster) error {
	if err := provisionClaims(ctx, c, 1, time.Minute); err != nil {
		return err
	}
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerPublishVolume"}}); err != nil {
		return err
	}
	if err := startPod(ctx, c); err != nil {
		return err
	}
	if err := c.RunFor(ctx, 10*time.Minute); err != nil {
		return err
	}
	if ok, _ := podRunning(ctx, c)(); ok {
		return fmt.Errorf("the pod ran while every attach hung")
	}
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.CSIHeal}); err != nil {
		return err
	}
	return c.RunUntil(ctx, 10*time.Minute, podRunning(ctx, c))
}
