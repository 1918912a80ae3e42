package kubelet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

func TestMountRequests(t *testing.T) {
	gid := testGroup()
	e := newEnv(t, envOptions{caps: stageCaps(), fsType: "ext4", fsGroup: &gid,
		driver: storagev1.CSIDriverSpec{PodInfoOnMount: ptr(true)}})
	e.runningPod()

	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	st, pub := e.node.stage[0], e.node.pub[0]
	wantStaging := filepath.Join(e.dir, "plugins/kubernetes.io/csi", testDriver, fmt.Sprintf("%x", sha256.Sum256([]byte(testHandle))), "globalmount")
	if st.GetStagingTargetPath() != wantStaging {
		t.Errorf("staging path %s, want %s", st.GetStagingTargetPath(), wantStaging)
	}
	if got := st.GetPublishContext()["devicePath"]; got != "/dev/loop9" {
		t.Errorf("stage publish context = %v", st.GetPublishContext())
	}
	if st.GetVolumeContext()["csi.storage.k8s.io/pod.name"] != "" {
		t.Errorf("NodeStageVolume got pod information: %v", st.GetVolumeContext())
	}
	target := filepath.Join(e.dir, "pods/uid-1/volumes/kubernetes.io~csi", testPV, "mount")
	if pub.GetTargetPath() != target || pub.GetStagingTargetPath() != st.GetStagingTargetPath() {
		t.Errorf("publish target %s staging %s, want %s and the staging path", pub.GetTargetPath(), pub.GetStagingTargetPath(), target)
	}
	wantCtx := map[string]string{"kind": "directory",
		"csi.storage.k8s.io/pod.name": "app", "csi.storage.k8s.io/pod.namespace": "default",
		"csi.storage.k8s.io/pod.uid": "uid-1", "csi.storage.k8s.io/serviceAccount.name": "builder",
		"csi.storage.k8s.io/ephemeral": "false"}
	if got := pub.GetVolumeContext(); len(got) != len(wantCtx) {
		t.Errorf("volume context %v, want %v", got, wantCtx)
	} else {
		for key, v := range wantCtx {
			if got[key] != v {
				t.Errorf("volume context %s = %q, want %q", key, got[key], v)
			}
		}
	}
	mnt := pub.GetVolumeCapability().GetMount()
	if pub.GetReadonly() || mnt == nil || mnt.GetFsType() != "ext4" || mnt.GetVolumeMountGroup() != "" ||
		pub.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("publish readonly=%v capability=%v", pub.GetReadonly(), pub.GetVolumeCapability())
	}
	// vol_data.json beside the mount and the staging path.
	data, err := loadVolumeData(filepath.Dir(target))
	if err != nil || data["volumeHandle"] != testHandle || data["driverName"] != testDriver || data["specVolID"] != testPV ||
		data["nodeName"] != testNode || data["volumeLifecycleMode"] != "Persistent" ||
		data["attachmentID"] != attachdetach.AttachmentName(testHandle, testDriver, testNode) {
		t.Errorf("pod vol_data.json = %v, %v", data, err)
	}
	if data, err := loadVolumeData(filepath.Dir(st.GetStagingTargetPath())); err != nil || data["volumeHandle"] != testHandle {
		t.Errorf("staging vol_data.json = %v, %v", data, err)
	}
	// Default policy, fsType ext4, RWO: the kubelet gave the published
	// directory to the fsGroup.
	for _, p := range []string{target, filepath.Join(target, "data")} {
		mode, group := statOf(t, p)
		if group != gid || mode&0o060 != 0o060 {
			t.Errorf("%s: group %d mode %v, want group %d with rw", p, group, mode, gid)
		}
	}
	if mode, _ := statOf(t, target); mode&os.ModeSetgid == 0 {
		t.Errorf("%s has no setgid: %v", target, mode)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFSGroupDelegatedToDriver(t *testing.T) {
	gid := int64(4242)
	e := newEnv(t, envOptions{caps: append(stageCaps(), csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP), fsType: "ext4", fsGroup: &gid,
		driver: storagev1.CSIDriverSpec{FSGroupPolicy: ptr(storagev1.FileFSGroupPolicy)}})
	e.runningPod()
	for name, c := range map[string]*csi.VolumeCapability{"stage": e.node.stage[0].GetVolumeCapability(), "publish": e.node.pub[0].GetVolumeCapability()} {
		if got := c.GetMount().GetVolumeMountGroup(); got != "4242" {
			t.Errorf("%s volume_mount_group = %q, want 4242", name, got)
		}
	}
	if _, group := statOf(t, e.node.pub[0].GetTargetPath()); group == gid {
		t.Errorf("the kubelet changed the group although the driver applies it")
	}
	if got := e.node.pub[0].GetVolumeContext()["csi.storage.k8s.io/pod.name"]; got != "" {
		t.Errorf("pod information without podInfoOnMount: %v", e.node.pub[0].GetVolumeContext())
	}
}

func TestReadOnlyClaimAndAccessModes(t *testing.T) {
	gid := testGroup()
	e := newEnv(t, envOptions{caps: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
		readOnly: true, fsGroup: &gid, modes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
		driver: storagev1.CSIDriverSpec{FSGroupPolicy: ptr(storagev1.FileFSGroupPolicy)}})
	e.runningPod()
	pub := e.node.pub[0]
	if !pub.GetReadonly() || pub.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY {
		t.Errorf("readonly=%v mode=%v, want true and MULTI_NODE_READER_ONLY", pub.GetReadonly(), pub.GetVolumeCapability().GetAccessMode().GetMode())
	}
	if mode, group := statOf(t, pub.GetTargetPath()); group == gid && gid != int64(os.Getgid()) || mode&os.ModeSetgid != 0 {
		t.Errorf("a read-only mount was given to the fsGroup: group %d mode %v", group, mode)
	}
}

func TestAccessModeMapping(t *testing.T) {
	multi := nodeCaps{csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER: true}
	for _, tt := range []struct {
		modes []corev1.PersistentVolumeAccessMode
		caps  nodeCaps
		want  csi.VolumeCapability_AccessMode_Mode
	}{
		{nil, nodeCaps{}, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{nil, multi, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, nodeCaps{}, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, multi, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}, multi, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}, multi, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: tt.modes}}
		if got := accessMode(pv, tt.caps); got != tt.want {
			t.Errorf("accessMode(%v, %v) = %v, want %v", tt.modes, tt.caps, got, tt.want)
		}
	}
}

func TestBlockVolumePaths(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), block: true})
	e.runningPod()
	st, pub := e.node.stage[0], e.node.pub[0]
	if want := filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices/staging", testPV); st.GetStagingTargetPath() != want {
		t.Errorf("block staging path %s, want %s", st.GetStagingTargetPath(), want)
	}
	if want := filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices/publish", testPV, "uid-1"); pub.GetTargetPath() != want {
		t.Errorf("block publish path %s, want %s", pub.GetTargetPath(), want)
	}
	for name, c := range map[string]*csi.VolumeCapability{"stage": st.GetVolumeCapability(), "publish": pub.GetVolumeCapability()} {
		if c.GetBlock() == nil || c.GetMount() != nil {
			t.Errorf("%s capability %v, want access type block", name, c)
		}
	}
	link := filepath.Join(e.dir, "pods/uid-1/volumeDevices/kubernetes.io~csi", testPV)
	if dest, err := os.Readlink(link); err != nil || dest != pub.GetTargetPath() {
		t.Errorf("pod device %s -> %q (%v), want a link to %s", link, dest, err, pub.GetTargetPath())
	}
	if data, err := loadVolumeData(filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices", testPV, "data")); err != nil || data["volumeHandle"] != testHandle {
		t.Errorf("block vol_data.json = %v, %v", data, err)
	}

	var msgs []string
	for _, ev := range e.events() {
		if ev.Reason == "SuccessfulMountVolume" && ev.Type == corev1.EventTypeNormal {
			msgs = append(msgs, ev.Message)
		}
	}
	slices.Sort(msgs)
	wantMsgs := []string{
		`MapVolume.MapPodDevice succeeded for volume "pv-1" globalMapPath "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev"`,
		`MapVolume.MapPodDevice succeeded for volume "pv-1" volumeMapPath "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi"`,
	}
	if !slices.Equal(msgs, wantMsgs) {
		t.Errorf("events %q, want %q", msgs, wantMsgs)
	}

	e.deletePod()
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("pod device link still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices", testPV)); !os.IsNotExist(err) {
		t.Errorf("block volume directory left behind: %v", err)
	}
}

// deletePod deletes the pod from the API (at once: the fake API server
// has no graceful deletion, as a force delete), syncs its (now missing)
// key, then the unstagings that queued.
func (e *env) deletePod() {
	e.t.Helper()
	e.deletePodKeepDevices()
	e.syncDevices()
}

// deletePodKeepDevices is deletePod without the unstagings: they stay
// queued.
func (e *env) deletePodKeepDevices() {
	e.t.Helper()
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the pod to leave the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("app")
		return err != nil
	})
	if err := e.sync("default/app"); err != nil {
		e.t.Fatalf("sync after delete: %v", err)
	}
}

// syncDevices runs the reconciler's unstagings in the kubelet's queue
// (other keys stay queued) and returns their keys.
func (e *env) syncDevices() []string {
	e.t.Helper()
	var devices, others []string
	for e.k.queue.Len() > 0 {
		key, _ := e.k.queue.Get()
		if strings.HasPrefix(key, deviceKeyPrefix) {
			devices = append(devices, key)
			if err := e.sync(key); err != nil {
				e.t.Fatalf("sync %s: %v", key, err)
			}
		} else {
			others = append(others, key)
		}
		e.k.queue.Done(key)
	}
	for _, key := range others {
		e.k.queue.Add(key)
	}
	return devices
}

func TestRestartReconstructsAndCleansUp(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	target := e.node.pub[0].GetTargetPath()

	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.k.actual.mountedVolume("uid-1", testPV)
	st := e.k.actual.stagedVolume(attachdetach.UniqueVolumeName(testDriver, testHandle))
	if m == nil || !m.uncertain || m.target != target || m.handle != testHandle || st == nil || !st.uncertain ||
		st.path != StagingPath(e.dir, testDriver, testHandle) {
		t.Fatalf("reconstructed mount %+v, staging %+v", m, st)
	}
	// The pod still exists: staged and published again, no status write.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodeStageVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls after restart = %v, want %v", got, want)
	}
	// The pod goes while nothing syncs its key: the orphan clean-up finds it.
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pod to leave the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("app")
		return err != nil
	})
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	e.syncDevices()
	want = append(want, "NodeUnpublishVolume", "NodeUnstageVolume")
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if u := e.node.unpub[0]; u.GetTargetPath() != target || u.GetVolumeId() != testHandle {
		t.Errorf("unpublish %v", u)
	}
	if u := e.node.unst[0]; u.GetStagingTargetPath() != StagingPath(e.dir, testDriver, testHandle) {
		t.Errorf("unstage %v", u)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods", "uid-1")); !os.IsNotExist(err) {
		t.Errorf("pod directory left behind: %v", err)
	}
}

func TestMissingDriverBacksOff(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), pvDriver: "missing.example.com",
		driver: storagev1.CSIDriverSpec{AttachRequired: ptr(false)}})
	var waits []time.Duration
	for range 4 {
		err := e.sync("default/app")
		var again controller.RequeueAfter
		if !errors.As(err, &again) {
			t.Fatalf("sync = %v, want a requeue", err)
		}
		waits = append(waits, time.Duration(again))
		// Woken early (say by a node update): still waiting, no new try.
		if err := e.sync("default/app"); !errors.As(err, &again) || time.Duration(again) != waits[len(waits)-1] {
			t.Fatalf("early sync = %v, want the same wait", err)
		}
		e.clock.Step(time.Duration(again))
	}
	if !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("backoff %v", waits)
	}
	evs := e.events()
	if len(evs) != 1 || evs[0].Reason != "FailedMount" || evs[0].Count != 4 || evs[0].Message !=
		`MountVolume.MountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name missing.example.com not found in the list of registered CSI drivers` {
		t.Errorf("events %+v", evs)
	}
	if got := e.node.lifecycle(); len(got) != 0 {
		t.Errorf("the node plugin was called: %v", got)
	}
}

func TestRequiresRepublishAndStats(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{RequiresRepublish: ptr(true)}})
	e.runningPod()
	e.k.Resync(context.Background())
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	// An ordinary sync (no resync due) publishes nothing.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if a, b := e.node.pub[0], e.node.pub[1]; a.GetTargetPath() != b.GetTargetPath() {
		t.Errorf("republished at %s, first at %s", b.GetTargetPath(), a.GetTargetPath())
	}
	e.k.CollectVolumeStats(context.Background())
	if len(e.node.stats) != 1 || e.node.stats[0].GetVolumePath() != e.node.pub[0].GetTargetPath() || e.node.stats[0].GetVolumeId() != testHandle {
		t.Errorf("stats requests %v", e.node.stats)
	}
}

func TestNoRepublishWithoutRequiresRepublish(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	e.k.Resync(context.Background())
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
}

func TestRestartCleansUpUnmountedVolumesOfGonePods(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), mountCheck: true})
	// Volume directories a previous kubelet left, their mounts gone: one
	// of a pod that no longer exists, one of the pod that does.
	for _, uid := range []string{"gone-uid", "uid-1"} {
		dir := filepath.Join(e.dir, "pods", uid, "volumes/kubernetes.io~csi", testPV)
		if err := os.MkdirAll(filepath.Join(dir, "mount"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := saveVolumeData(dir, map[string]string{"specVolID": testPV, "volumeHandle": testHandle, "driverName": testDriver}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := len(e.k.actual.pods())
	if n != 0 {
		t.Fatalf("unmounted volumes were reconstructed: %d pods", n)
	}
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeUnpublishVolume"}) {
		t.Fatalf("calls = %v, want one NodeUnpublishVolume", got)
	}
	if want := filepath.Join(e.dir, "pods/gone-uid/volumes/kubernetes.io~csi", testPV, "mount"); e.node.unpub[0].GetTargetPath() != want {
		t.Errorf("unpublished %s, want %s", e.node.unpub[0].GetTargetPath(), want)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods/gone-uid")); !os.IsNotExist(err) {
		t.Errorf("the gone pod's directory is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods/uid-1", "volumes/kubernetes.io~csi", testPV, "vol_data.json")); err != nil {
		t.Errorf("the live pod's volume directory was touched: %v", err)
	}
	// Once: a second clean-up does nothing.
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); len(got) != 1 {
		t.Errorf("calls after a second clean-up = %v", got)
	}
}

// usesData is the test pod's container, which uses the volume "data": as a
// mount, or as a device when the volume is raw block (the kubelet sets up
// only volumes a container uses).
func usesData(block bool) corev1.Container {
	c := corev1.Container{Name: "app", Image: "busybox"}
	if block {
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return c
}

// TestReadWriteOncePodInUseOnNode: a second pod on this node using a
// volume whose only access mode is ReadWriteOncePod is refused by the
// kubelet itself, in its words, before any CSI call; a volume that also
// has another mode is left to the driver.
func TestReadWriteOncePodInUseOnNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modes   []corev1.PersistentVolumeAccessMode
		refused bool
	}{
		{"ReadWriteOncePod only", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, true},
		{"ReadWriteOnce", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: stageCaps(), modes: tc.modes})
			e.runningPod()
			calls := len(e.node.lifecycle())
			second := e.pod.DeepCopy()
			second.Name, second.UID, second.ResourceVersion = "second", "uid-2", ""
			if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.waitFor("the second pod in the informer", func() bool {
				_, err := e.k.pods.Pods("default").Get("second")
				return err == nil
			})
			err := e.sync("default/second")
			var refusal string
			for _, ev := range e.events() {
				if ev.InvolvedObject.Name == "second" && ev.Reason == "FailedMount" {
					refusal = ev.Message
				}
			}
			if !tc.refused {
				if refusal != "" {
					t.Fatalf("refused: %s", refusal)
				}
				return
			}
			var again controller.RequeueAfter
			if !errors.As(err, &again) {
				t.Fatalf("sync = %v, want a requeue after the backoff", err)
			}
			if want := `MountVolume.SetUp failed for volume "` + testPV + `" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`; refusal != want {
				t.Errorf("event %q, want %q", refusal, want)
			}
			if got := e.node.lifecycle(); len(got) != calls {
				t.Errorf("CSI calls for the second pod: %v", got[calls:])
			}
		})
	}
}
