package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/kubelet"
)

// TestMain removes the csisim binary the tests built.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestRealMounts runs one pod with a filesystem volume and a block volume
// of csisim's driver, with real mounts and loop devices, and checks on
// disk what the kubelet did: the fsGroup on the published directory, the
// block device's link, global bind mount and loop lock, all kept across a
// kubelet restart and all gone after the pod.
func TestRealMounts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test mounts and needs root, as csisim's driver does")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: []string{"node-1"}, DriverBinary: testenv.CsisimBinary(t), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	create := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	file := storagev1.FileFSGroupPolicy
	_, err = cs.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: c.DriverName()},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(true), FSGroupPolicy: &file}}, metav1.CreateOptions{})
	create(err)
	for name, params := range map[string]map[string]string{"dirs": nil, "blocks": {"kind": "block"}} {
		_, err = cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Provisioner: c.DriverName(), Parameters: params}, metav1.CreateOptions{})
		create(err)
	}
	block := corev1.PersistentVolumeBlock
	for name, class := range map[string]string{"fs": "dirs", "raw": "blocks"} {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
		if name == "raw" {
			claim.Spec.VolumeMode = &block
		}
		_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
		create(err)
	}
	gid := int64(2000)
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid},
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				VolumeMounts:  []corev1.VolumeMount{{Name: "fs", MountPath: "/data"}},
				VolumeDevices: []corev1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}}},
			Volumes: []corev1.Volume{
				{Name: "fs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fs"}}},
				{Name: "raw", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "raw"}}},
			}}}, metav1.CreateOptions{})
	create(err)
	err = c.RunUntil(ctx, time.Minute, func() (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	create(err)
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
	create(err)
	volumeOf := func(claim string) string {
		pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
		create(err)
		return pvc.Spec.VolumeName
	}
	fsPV, rawPV := volumeOf("fs"), volumeOf("raw")
	dir := filepath.Join(c.Root(), "nodes", "node-1", "kubelet")
	target := kubelet.PublishPath(dir, pod.UID, fsPV)
	link := kubelet.PodDevicePath(dir, pod.UID, rawPV)
	publish := kubelet.BlockPublishPath(dir, rawPV, pod.UID)
	global := filepath.Join(dir, "plugins/kubernetes.io/csi/volumeDevices", rawPV, "dev", string(pod.UID))

	checkMapped := func(when string) {
		t.Helper()
		if mounted, err := mountinfo.Mounted(target); err != nil || !mounted {
			t.Errorf("%s: %s is not mounted (%v)", when, target, err)
		}
		fi, err := os.Stat(target)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if g := fi.Sys().(*syscall.Stat_t).Gid; g != uint32(gid) || fi.Mode()&os.ModeSetgid == 0 || fi.Mode().Perm()&0o070 != 0o070 {
			t.Errorf("%s: published directory has group %d, mode %v; want group %d, setgid, group rwx", when, g, fi.Mode(), gid)
		}
		if dest, err := os.Readlink(link); err != nil || dest != publish {
			t.Errorf("%s: pod device %s -> %q (%v), want %s", when, link, dest, err, publish)
		}
		if fi, err := os.Stat(link); err != nil || fi.Mode()&os.ModeDevice == 0 {
			t.Errorf("%s: the pod's device is not a device: %v", when, err)
		}
		if mounted, err := mountinfo.Mounted(global); err != nil || !mounted {
			t.Errorf("%s: global map %s is not mounted (%v)", when, global, err)
		}
		if out, _ := exec.Command("losetup", "-j", global).Output(); !strings.Contains(string(out), "/dev/loop") {
			t.Errorf("%s: no loop device holds %s: %q", when, global, out)
		}
	}
	checkMapped("running")

	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.KubeletRestart, Node: "node-1"}); err != nil {
		t.Fatal(err)
	}
	create(c.RunFor(ctx, 5*time.Second))
	checkMapped("after a kubelet restart")
	if out, _ := exec.Command("losetup", "-j", global).Output(); strings.Count(string(out), "/dev/loop") != 1 {
		t.Errorf("after the restart the device is locked more than once: %q", out)
	}

	create(cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{}))
	err = c.RunUntil(ctx, time.Minute, func() (bool, error) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	create(err)
	if out, _ := exec.Command("losetup", "-j", global).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("the loop lock is left after the pod: %q", out)
	}
	fsHandle, err := cs.CoreV1().PersistentVolumes().Get(ctx, fsPV, metav1.GetOptions{})
	create(err)
	for _, p := range []string{
		filepath.Join(dir, "pods", string(pod.UID)),
		filepath.Join(dir, "plugins/kubernetes.io/csi/volumeDevices", rawPV),
		filepath.Join(dir, "plugins/kubernetes.io/csi/volumeDevices/staging", rawPV),
		filepath.Join(dir, "plugins/kubernetes.io/csi/volumeDevices/publish", rawPV),
		filepath.Dir(kubelet.StagingPath(dir, c.DriverName(), fsHandle.Spec.CSI.VolumeHandle)),
	} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left after the pod (%v)", p, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRealExpansion grows a filesystem volume and a raw block volume of
// csisim's driver while a pod uses them, doing by hand what the
// external-resizer does (ControllerExpandVolume, the PV's capacity, the
// claim marked NodeResizePending; the claim's request is left as it is,
// so the cluster's own external-resizer has nothing to do), and checks that the kubelet's
// NodeExpandVolume made the node see the new size: the mounted ext4 file
// system and the pod's block device have grown, and the claims say so.
func TestRealExpansion(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test mounts and needs root, as csisim's driver does")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: []string{"node-1"}, DriverBinary: testenv.CsisimBinary(t), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: c.DriverName()},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(true)}}, metav1.CreateOptions{})
	must(err)
	_, err = cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "blocks"},
		Provisioner: c.DriverName(), Parameters: map[string]string{"kind": "block"}, AllowVolumeExpansion: ptr(true)}, metav1.CreateOptions{})
	must(err)
	block := corev1.PersistentVolumeBlock
	class := "blocks"
	for _, name := range []string{"fs", "raw"} {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
		if name == "raw" {
			claim.Spec.VolumeMode = &block
		}
		_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
		must(err)
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				VolumeMounts:  []corev1.VolumeMount{{Name: "fs", MountPath: "/data"}},
				VolumeDevices: []corev1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}}},
			Volumes: []corev1.Volume{
				{Name: "fs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fs"}}},
				{Name: "raw", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "raw"}}},
			}}}, metav1.CreateOptions{})
	must(err)
	must(c.RunUntil(ctx, time.Minute, func() (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}))
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
	must(err)

	// The resizer's part.
	resizer, err := csiclient.Dial(c.ControllerEndpoint(), "external-resizer", c.Recorder())
	must(err)
	defer resizer.Close()
	size := resource.MustParse("128Mi")
	pvs := map[string]string{}
	for _, name := range []string{"fs", "raw"} {
		pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		must(err)
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		must(err)
		pvs[name] = pv.Name
		resp, err := resizer.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
			VolumeId: pv.Spec.CSI.VolumeHandle, CapacityRange: &csi.CapacityRange{RequiredBytes: size.Value()}})
		must(err)
		if !resp.GetNodeExpansionRequired() {
			t.Fatalf("ControllerExpandVolume of %s: node expansion not required", name)
		}
		pv.Spec.Capacity[corev1.ResourceStorage] = size
		_, err = cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		must(err)
		pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: size}
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
		_, err = cs.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		must(err)
	}
	// The kubelet sees it at the pod's periodic sync.
	must(c.RunUntil(ctx, 3*time.Minute, func() (bool, error) {
		for _, name := range []string{"fs", "raw"} {
			pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || pvc.Status.Capacity.Storage().Cmp(size) != 0 || pvc.Status.AllocatedResourceStatuses != nil {
				return false, err
			}
		}
		return true, nil
	}))
	dir := filepath.Join(c.Root(), "nodes", "node-1", "kubelet")
	var fs syscall.Statfs_t
	must(syscall.Statfs(kubelet.PublishPath(dir, pod.UID, pvs["fs"]), &fs))
	if total := int64(fs.Blocks) * fs.Bsize; total <= 96<<20 {
		t.Errorf("the mounted file system has %d bytes, not grown to about 128 MiB", total)
	}
	out, err := exec.Command("blockdev", "--getsize64", kubelet.PodDevicePath(dir, pod.UID, pvs["raw"])).Output()
	must(err)
	if got := strings.TrimSpace(string(out)); got != fmt.Sprint(size.Value()) {
		t.Errorf("the pod's block device has %s bytes, want %d", got, size.Value())
	}

	must(cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{}))
	must(c.RunUntil(ctx, time.Minute, func() (bool, error) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))
}
