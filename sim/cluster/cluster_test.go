package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// csisimBinary is the csisim command, built once for the tests that run
// csisim's own driver as separate processes.
var csisimBinary string

func TestMain(m *testing.M) {
	var err error
	if csisimBinary, err = testenv.BuildCsisim(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m)
}

func nodeNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("node-%d", i))
	}
	return out
}

// provisionClaims creates n claims of the driver's class and runs the
// cluster until every one is Bound.
func provisionClaims(ctx context.Context, c *Cluster, n int, timeout time.Duration) error {
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	drv, sc := DriverObjects(c.DriverName())
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-%d", i), Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
		if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return c.RunUntil(ctx, timeout, func() (bool, error) {
		list, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pvc := range list.Items {
			if pvc.Status.Phase != corev1.ClaimBound {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	})
}

func TestMockDriverProvisionsWithoutMounts(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(3), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := provisionClaims(ctx, c, 20, time.Minute); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, e := range c.CSICalls() {
		if e.Verb == "CreateVolume" && e.Err == "" {
			creates++
		}
	}
	if creates != 20 {
		t.Errorf("%d successful CreateVolume calls, want 20", creates)
	}
}

func TestRealDriverProvisions(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(2), DriverBinary: csisimBinary, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := provisionClaims(ctx, c, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkProvision1000Claims: 1,000 claims provisioned and bound on a
// ten-node cluster, with the mock driver and with csisim's own driver
// (real directories, real gRPC to separate processes).
func BenchmarkProvision1000Claims(b *testing.B) {
	onBothDrivers(b, 10, func(ctx context.Context, c *Cluster) error {
		return provisionClaims(ctx, c, 1000, 10*time.Minute)
	}, "claims/s", func(d time.Duration) float64 { return 1000 / d.Seconds() })
}

// onBothDrivers runs work on a fresh cluster of n nodes in each iteration,
// with the mock driver and with csisim's own, and reports value of the
// wall time work took, in unit.
func onBothDrivers(b *testing.B, nodes int, work func(context.Context, *Cluster) error, unit string, value func(time.Duration) float64) {
	for _, mock := range []bool{true, false} {
		name := "hostpath"
		if mock {
			name = "mock"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ctx := context.Background()
				c, err := Start(ctx, Config{Nodes: nodeNames(nodes), Mock: mock, DriverBinary: csisimBinary, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := work(ctx, c); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(value(time.Since(start)), unit)
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAttachMountLifecycle: full lifecycles of 100 pods, each with its
// own claim, across ten nodes — provision, attach, stage, publish, pod
// Running, then pod deleted, unpublish, unstage, detach — with the mock
// driver and with csisim's own (real bind mounts).
func BenchmarkAttachMountLifecycle(b *testing.B) {
	const pods = 100
	onBothDrivers(b, 10, func(ctx context.Context, c *Cluster) error { return runLifecycles(ctx, c, pods) },
		"lifecycles/s", func(d time.Duration) float64 { return pods / d.Seconds() })
}

// runLifecycles provisions n claims, runs a pod on each (spread over the
// nodes by nodeName), waits until all run, deletes the pods and waits until
// every volume is detached.
func runLifecycles(ctx context.Context, c *Cluster, n int) error {
	if err := provisionClaims(ctx, c, n, 10*time.Minute); err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	nodes := c.cfg.Nodes
	for i := 0; i < n; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: nodes[i%len(nodes)], Containers: []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("data-%d", i)}}}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	allRunning := func() (bool, error) {
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return len(list.Items) == n, nil
	}
	if err := c.RunUntil(ctx, 10*time.Minute, allRunning); err != nil {
		return fmt.Errorf("waiting for the pods to run: %w", err)
	}
	for i := 0; i < n; i++ {
		if err := cs.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("app-%d", i), metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return c.RunUntil(ctx, 10*time.Minute, func() (bool, error) {
		vas, err := cs.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(vas.Items) == 0 && len(pods.Items) == 0, err
	})
}

// A long wait asks its condition again only when an object or the timeline
// has changed, not at every heartbeat and resync of a quiet cluster.
func TestRunUntilAsksOnlyAfterChanges(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(2), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.RunFor(ctx, time.Minute); err != nil { // past start-up's writes
		t.Fatal(err)
	}
	asked := 0
	err = c.RunUntil(ctx, 10*time.Minute, func() (bool, error) { asked++; return false, nil })
	if err != context.DeadlineExceeded {
		t.Fatalf("RunUntil = %v, want the deadline", err)
	}
	// Two kubelets renew their Leases every 10 s, each on a timer of its
	// own, and controllers resync on theirs; the condition is to be asked
	// once per instant at which something changed, not once per timer.
	instants := map[time.Duration]bool{}
	for _, e := range c.Recorder().Entries() {
		if e.At > time.Minute {
			instants[e.At] = true
		}
	}
	if asked == 0 || asked > len(instants)+1 {
		t.Errorf("condition asked %d times, for changes at %d instants of the wait", asked, len(instants))
	}
}
