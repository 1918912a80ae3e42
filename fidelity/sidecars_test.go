package fidelity

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/sim/cluster"
)

// requireBinaries skips (or, with CSISIM_REALKUBE=required, fails) when the
// real components are not built.
func requireBinaries(t *testing.T, names ...string) string {
	t.Helper()
	bin := realkube.BinDir()
	if err := realkube.Available(bin, names...); err != nil {
		if os.Getenv("CSISIM_REALKUBE") == "required" {
			t.Fatalf("the real components are required: %v (run make realkube-bins)", err)
		}
		t.Skipf("the real components are not built: %v (run make realkube-bins)", err)
	}
	return bin
}

// TestMain removes the csisim binary the tests built.
func TestMain(m *testing.M) { testenv.Main(m) }

// serveHTTP serves the cluster's API server on loopback and writes a
// kubeconfig for it.
func serveHTTP(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: c.API(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["csisim"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	cfg.AuthInfos["csisim"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["csisim"] = &clientcmdapi.Context{Cluster: "csisim", AuthInfo: "csisim"}
	cfg.CurrentContext = "csisim"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProcess runs a real component until the test ends; its output goes
// to a log file that is printed if the test fails.
func startProcess(t *testing.T, path string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(path)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s output:\n%s", filepath.Base(path), tail(string(data), 60))
			}
		}
	})
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// TestUpstreamSidecarsAgainstFakekube runs the real csi-provisioner and
// csi-attacher against csisim's API server over HTTP, in place of the
// simulated ones, with csisim's driver: they must provision, attach,
// detach and delete a volume as they do in a real cluster, and write the
// objects as the simulated sidecars write them.
func TestUpstreamSidecarsAgainstFakekube(t *testing.T) {
	bin := requireBinaries(t, "csi-provisioner", "csi-attacher")
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Config{Realtime: true, DriverBinary: testenv.CsisimBinary(t), Seed: 1,
		Without: []string{"external-provisioner", "external-attacher"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	})
	kubeconfig := serveHTTP(t, c)
	socket := strings.TrimPrefix(c.ControllerEndpoint(), "unix://")
	for _, sidecar := range []string{"csi-provisioner", "csi-attacher"} {
		startProcess(t, filepath.Join(bin, sidecar), "--kubeconfig="+kubeconfig, "--csi-address="+socket,
			"--leader-election=false", "--timeout=30s", "-v=2")
	}

	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	drv, sc := cluster.DriverObjects(c.DriverName())
	mustCreate(t, func() error {
		_, err := cs.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		return err
	})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	mustCreate(t, func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
		return err
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	mustCreate(t, func() error {
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})

	eventually(t, "the claim is bound by the real provisioner", func() error {
		got, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil || got.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim: %v %v", phaseOf(got), err)
		}
		return nil
	})
	got, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Name != "pvc-"+string(got.UID) || pv.Annotations["pv.kubernetes.io/provisioned-by"] != c.DriverName() ||
		!slices.Contains(pv.Finalizers, "external-provisioner.volume.kubernetes.io/finalizer") {
		t.Errorf("the real provisioner's PV: name %s annotations %v finalizers %v", pv.Name, pv.Annotations, pv.Finalizers)
	}
	eventually(t, "the pod runs on a volume the real attacher attached", func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod: %v", err)
		}
		vas, err := cs.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil || len(vas.Items) != 1 || !vas.Items[0].Status.Attached {
			return fmt.Errorf("volume attachments: %v %v", vas, err)
		}
		if !slices.Contains(vas.Items[0].Finalizers, "external-attacher/hostpath-csisim-io") {
			return fmt.Errorf("attachment finalizers %v", vas.Items[0].Finalizers)
		}
		return nil
	})

	if err := cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the real sidecars detach and delete the volume", func() error {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("PV still there (%v)", err)
		}
		vas, err := cs.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil || len(vas.Items) != 0 {
			return fmt.Errorf("attachments left: %v %v", vas, err)
		}
		return nil
	})
	var calls []string
	for _, e := range c.CSICalls() {
		calls = append(calls, e.Actor+" "+e.Verb)
	}
	// The real sidecars call the driver directly, not through csisim's
	// recording client: only the kubelet's calls are in the timeline.
	for _, want := range []string{"kubelet:node-1 NodeStageVolume", "kubelet:node-1 NodeUnstageVolume"} {
		if !slices.Contains(calls, want) {
			t.Errorf("timeline has no %q: %v", want, calls)
		}
	}
}

func phaseOf(pvc *corev1.PersistentVolumeClaim) string {
	if pvc == nil {
		return "<none>"
	}
	return string(pvc.Status.Phase)
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) {
			last = cond()
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}
