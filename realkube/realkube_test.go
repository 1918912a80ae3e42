package realkube

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/runroot"
)

// requireBinaries skips the test when the control-plane binaries are not
// built, unless CSISIM_REALKUBE=required, where it fails.
func requireBinaries(t *testing.T) string {
	t.Helper()
	bin := BinDir()
	if err := Available(bin); err != nil {
		if os.Getenv("CSISIM_REALKUBE") == "required" {
			t.Fatalf("CSISIM_REALKUBE=required: %v", err)
		}
		t.Skip(err.Error())
	}
	return bin
}

func TestAvailable(t *testing.T) {
	dir := t.TempDir()
	err := Available(dir)
	if err == nil {
		t.Fatal("Available on an empty dir: want error")
	}
	for _, n := range ControlPlaneBinaries {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
	for _, n := range ControlPlaneBinaries {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Available(dir); err != nil {
		t.Fatalf("Available with all control-plane binaries: %v", err)
	}
	if err := Available(dir, CSIProvisioner); err == nil || !strings.Contains(err.Error(), CSIProvisioner) {
		t.Fatalf("Available(csi-provisioner) = %v, want it missing", err)
	}
	if _, err := Start(context.Background(), Config{BinDir: t.TempDir(), RootDir: t.TempDir()}); err == nil {
		t.Fatal("Start without binaries: want error")
	}
}

func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) *x509.Certificate {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pool := x509.NewCertPool()
	pool.AddCert(read(p.caCert))
	serving := read(p.servingCert)
	for _, host := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	admin := read(p.adminCert)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate: %v", err)
	}
	if got := admin.Subject.Organization; len(got) != 1 || got[0] != "system:masters" {
		t.Errorf("admin organization = %v, want [system:masters]", got)
	}
	for _, f := range []string{p.saKey, p.saPub, p.caKey, p.servingKey, p.adminKey} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSnapshotCRDs(t *testing.T) {
	dir, err := SnapshotCRDDir()
	if err != nil {
		t.Skipf("snapshot CRDs not available: %v", err)
	}
	crds, err := loadCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	for _, want := range []string{"volumesnapshots.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io",
		"volumesnapshotclasses.snapshot.storage.k8s.io", "volumegroupsnapshots.groupsnapshot.storage.k8s.io"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("CRD %s not among %v", want, names)
		}
	}
}

// TestControlPlane starts the real control plane, checks its version, lets
// the PV controller act on a claim, stops it and checks nothing is left.
func TestControlPlane(t *testing.T) {
	bin := requireBinaries(t)
	root, err := runroot.New("realkube-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := root.Close(); err != nil {
			t.Errorf("close run root: %v", err)
		}
	})
	clusterDir := root.Path("cluster")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	started := time.Now()
	cfg := Config{BinDir: bin, RootDir: clusterDir, ControllersFlag: "*,-attachdetach"}
	if os.Getenv("CSISIM_REALKUBE_LOG") != "" {
		cfg.Log = os.Stderr // every component's output, prefixed [component]
	}
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("control plane healthy after %s", time.Since(started).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	dumpLogsOnFailure(t, c)

	pids := c.PIDs()
	for _, n := range ControlPlaneBinaries {
		if pids[n] == 0 {
			t.Fatalf("no PID for %s: %v", n, pids)
		}
	}
	checkLoopbackOnly(t, pids)

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("/version: %v", err)
	}
	if v.GitVersion != KubeVersion || v.Major != "1" || v.Minor != "37" {
		t.Fatalf("/version = %s (major %q minor %q), want %s", v.GitVersion, v.Major, v.Minor, KubeVersion)
	}

	// The kubeconfig file works as well.
	kc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	kcs, err := kubernetes.NewForConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kcs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("kubeconfig client: %v", err)
	}

	// The snapshot CRDs are served.
	dc, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	vs := schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	if _, err := dc.Resource(vs).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list volumesnapshots: %v", err)
	}

	// The PV controller hands a claim of a StorageClass to its provisioner.
	const provisioner = "csisim.example.com"
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "realkube-test"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	immediate := storagev1.VolumeBindingImmediate
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "realkube-test"},
		Provisioner:       provisioner,
		VolumeBindingMode: &immediate,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc := "realkube-test"
	created := time.Now()
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns.Name).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got string
	for got != provisioner {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns.Name).Get(ctx, "claim", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get claim: %v", err)
		}
		got = pvc.Annotations["volume.kubernetes.io/storage-provisioner"]
		if got == provisioner {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("claim never got volume.kubernetes.io/storage-provisioner=%s (annotations %v)", provisioner, pvc.Annotations)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("PV controller annotated the claim %s after creation", time.Since(created).Round(time.Millisecond))
	checkAPIProxy(ctx, t, c)

	// Stop: every process is gone, nothing runs from the root dir.
	stopStart := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	t.Logf("stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			if refersTo(pid, clusterDir) {
				t.Errorf("%s (pid %d) still running after Stop", name, pid)
			}
		}
	}
	if left := processesUnder(clusterDir); len(left) > 0 {
		t.Errorf("processes still use %s after Stop: %v", clusterDir, left)
	}
}

// checkLoopbackOnly asserts that every TCP socket the components listen on
// is bound to 127.0.0.1.
func checkLoopbackOnly(t *testing.T, pids map[string]int) {
	t.Helper()
	inodes := map[string]string{} // socket inode -> component
	for name, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = name
			}
		}
	}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // LISTEN
				continue
			}
			name, ok := inodes[f[9]]
			if !ok {
				continue
			}
			addr := f[1][:strings.IndexByte(f[1], ':')]
			if addr != "0100007F" { // 127.0.0.1, little-endian hex
				ip := hexIP(addr)
				t.Errorf("%s listens on %s, want 127.0.0.1 only", name, ip)
			}
		}
	}
}

func hexIP(h string) string {
	var b []byte
	for i := 0; i+8 <= len(h); i += 8 {
		v, _ := strconv.ParseUint(h[i:i+8], 16, 32)
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return net.IP(b).String()
}

// refersTo says whether process pid has dir in its command line, working
// directory or executable path.
func refersTo(pid int, dir string) bool {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) || strings.HasPrefix(exe, dir)
}

// processesUnder lists processes (other than this one) that refer to dir.
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if refersTo(pid, dir) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out = append(out, fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(cmd))))
		}
	}
	return out
}

func dumpLogsOnFailure(t *testing.T, c *Cluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range ControlPlaneBinaries {
			b, err := os.ReadFile(c.LogPath(n))
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			t.Logf("--- %s ---\n%s", n, strings.Join(lines, "\n"))
		}
	})
}

// checkAPIProxy checks that a kubelet reaches kube-apiserver through the
// API proxy as itself, and that stopping the proxy refuses the components
// and not the harness.
func checkAPIProxy(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	nodeKubeconfig, err := c.NodeKubeconfig("node-1")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := clientcmd.BuildConfigFromFlags("", nodeKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Host != c.APIProxy().URL() {
		t.Fatalf("the node's kubeconfig goes to %s, not to the API proxy at %s", nc.Host, c.APIProxy().URL())
	}
	node := kubernetes.NewForConfigOrDie(nc)
	review, err := node.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self-subject review through the API proxy: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "system:node:node-1" || !slices.Contains(u.Groups, "system:nodes") {
		t.Errorf("through the API proxy the node is %q in %v, want system:node:node-1 in system:nodes", u.Username, u.Groups)
	}

	components := kubernetes.NewForConfigOrDie(c.ComponentRESTConfig())
	harness := kubernetes.NewForConfigOrDie(c.RESTConfig())
	if err := c.APIProxy().SetDown(true); err != nil {
		t.Fatal(err)
	}
	if _, err := components.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); !utilnet.IsConnectionRefused(err) {
		t.Errorf("a component's request while the API server is down: %v, want connection refused", err)
	}
	if _, err := harness.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the harness's request while the API server is down for the components: %v", err)
	}
	if err := c.APIProxy().SetDown(false); err != nil {
		t.Fatal(err)
	}
	if _, err := components.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a component's request once the API server is back: %v", err)
	}
}
