package kubelet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/sim/controller"
)

var bothModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}

func TestInlineVolumeHandle(t *testing.T) {
	// csi-<sha256 of the pod UID followed by the volume name>, as the
	// real kubelet's makeVolumeHandle.
	want := fmt.Sprintf("csi-%x", sha256.Sum256([]byte("uid-1data")))
	if got := InlineVolumeHandle("uid-1", "data"); got != want {
		t.Errorf("handle %s, want %s", got, want)
	}
	if InlineVolumeHandle("uid-1", "data") == InlineVolumeHandle("uid-2", "data") {
		t.Error("two pods' volumes got one handle")
	}
}

func TestInlineEphemeralPublish(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pub", Namespace: "default"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	e := newEnv(t, envOptions{caps: stageCaps(),
		driver: storagev1.CSIDriverSpec{PodInfoOnMount: ptr(true), VolumeLifecycleModes: bothModes},
		inline: &corev1.CSIVolumeSource{Driver: testDriver, ReadOnly: ptr(true), FSType: ptr("ext4"),
			VolumeAttributes: map[string]string{"size": "small"}, NodePublishSecretRef: &corev1.LocalObjectReference{Name: "pub"}},
		extra: []runtime.Object{secret}})
	e.runningPod()

	// Published only: never staged, nor waited for an attachment.
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	pub := e.node.pub[0]
	handle := InlineVolumeHandle("uid-1", "data")
	target := filepath.Join(e.dir, "pods/uid-1/volumes/kubernetes.io~csi/data/mount")
	if pub.GetVolumeId() != handle || pub.GetTargetPath() != target || pub.GetStagingTargetPath() != "" || len(pub.GetPublishContext()) != 0 {
		t.Errorf("publish id %s target %s staging %q context %v; want %s at %s", pub.GetVolumeId(), pub.GetTargetPath(),
			pub.GetStagingTargetPath(), pub.GetPublishContext(), handle, target)
	}
	wantCtx := map[string]string{"size": "small",
		"csi.storage.k8s.io/pod.name": "app", "csi.storage.k8s.io/pod.namespace": "default",
		"csi.storage.k8s.io/pod.uid": "uid-1", "csi.storage.k8s.io/serviceAccount.name": "builder",
		"csi.storage.k8s.io/ephemeral": "true"}
	if got := pub.GetVolumeContext(); len(got) != len(wantCtx) {
		t.Errorf("volume context %v, want %v", got, wantCtx)
	} else {
		for key, v := range wantCtx {
			if got[key] != v {
				t.Errorf("volume context %s = %q, want %q", key, got[key], v)
			}
		}
	}
	if !pub.GetReadonly() || pub.GetVolumeCapability().GetMount().GetFsType() != "ext4" ||
		pub.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("publish readonly=%v capability=%v", pub.GetReadonly(), pub.GetVolumeCapability())
	}
	if got := pub.GetSecrets(); len(got) != 1 || got["token"] != "s3cret" {
		t.Errorf("secrets %v", got)
	}
	data, err := loadVolumeData(filepath.Dir(target))
	if err != nil || data["volumeHandle"] != handle || data["specVolID"] != "data" || data["driverName"] != testDriver ||
		data["volumeLifecycleMode"] != "Ephemeral" || data["nodeName"] != testNode {
		t.Errorf("vol_data.json = %v, %v", data, err)
	}
	// No attachment, so nothing in volumesInUse.
	if got := e.k.volumesInUse(); len(got) != 0 {
		t.Errorf("volumesInUse %v", got)
	}

	e.deletePod()
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodePublishVolume", "NodeUnpublishVolume"}) {
		t.Fatalf("calls after delete = %v", got)
	}
	if u := e.node.unpub[0]; u.GetVolumeId() != handle || u.GetTargetPath() != target {
		t.Errorf("unpublish %v", u)
	}
}

func TestInlineEphemeralWithoutPodInfo(t *testing.T) {
	// Without podInfoOnMount the volume context is the volume's
	// attributes alone: no pod information, no ephemeral key.
	e := newEnv(t, envOptions{caps: stageCaps(),
		driver: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}},
		inline: &corev1.CSIVolumeSource{Driver: testDriver, VolumeAttributes: map[string]string{"size": "small"}}})
	e.runningPod()
	pub := e.node.pub[0]
	if got := pub.GetVolumeContext(); len(got) != 1 || got["size"] != "small" {
		t.Errorf("volume context %v", got)
	}
	if pub.GetReadonly() || pub.GetVolumeCapability().GetMount().GetFsType() != "" || len(pub.GetSecrets()) != 0 {
		t.Errorf("publish %v", pub)
	}
}

func TestInlineEphemeralRefused(t *testing.T) {
	const prefix = `MountVolume.SetUp failed for volume "data" : `
	for _, tc := range []struct {
		name string
		o    envOptions
		want string
	}{{
		name: "persistent only",
		o:    envOptions{driver: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}},
		want: prefix + `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver hostpath.csisim.io (only supports ["Persistent"])`,
	}, {
		name: "no modes listed",
		o:    envOptions{},
		want: prefix + `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver hostpath.csisim.io (only supports [])`,
	}, {
		name: "no CSIDriver",
		o:    envOptions{noCSIDriver: true},
		want: prefix + `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver hostpath.csisim.io (no CSIDriver object)`,
	}, {
		name: "missing publish secret",
		o: envOptions{driver: storagev1.CSIDriverSpec{VolumeLifecycleModes: bothModes},
			inline: &corev1.CSIVolumeSource{Driver: testDriver, NodePublishSecretRef: &corev1.LocalObjectReference{Name: "gone"}}},
		want: prefix + `fetching NodePublishSecretRef default/gone failed: kubernetes.io/csi: failed to find the secret gone in the namespace default with error: secrets "gone" not found`,
	}, {
		name: "driver not registered",
		o: envOptions{driver: storagev1.CSIDriverSpec{VolumeLifecycleModes: bothModes},
			inline: &corev1.CSIVolumeSource{Driver: "other.example.com"}},
		want: prefix + `kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name other.example.com not found in the list of registered CSI drivers`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.caps = stageCaps()
			if o.inline == nil {
				o.inline = &corev1.CSIVolumeSource{Driver: testDriver}
			}
			e := newEnv(t, o)
			for range 3 {
				err := e.sync("default/app")
				var again controller.RequeueAfter
				if !errors.As(err, &again) {
					t.Fatalf("sync = %v, want a requeue", err)
				}
				e.clock.Step(time.Duration(again))
			}
			if got := e.node.lifecycle(); len(got) != 0 {
				t.Errorf("calls %v, want none", got)
			}
			var msgs []string
			for _, ev := range e.events() {
				if ev.Reason == "FailedMount" && strings.HasPrefix(ev.Message, "MountVolume.SetUp") {
					msgs = append(msgs, ev.Message)
				}
			}
			if len(msgs) != 1 || msgs[0] != tc.want {
				t.Errorf("events %q, want one %q", msgs, tc.want)
			}
			if p, _ := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); p.Status.Phase != corev1.PodPending {
				t.Errorf("pod %s, want Pending", p.Status.Phase)
			}
		})
	}
}

func TestInlineEphemeralReconstructed(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(),
		driver: storagev1.CSIDriverSpec{PodInfoOnMount: ptr(true), VolumeLifecycleModes: bothModes},
		inline: &corev1.CSIVolumeSource{Driver: testDriver}})
	e.runningPod()
	target := e.node.pub[0].GetTargetPath()
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.k.actual.mountedVolume("uid-1", "data")
	staged := len(e.k.actual.stagedVolumes())
	if m == nil || !m.uncertain || m.target != target || m.handle != InlineVolumeHandle("uid-1", "data") ||
		m.unique != inlineUniqueName("uid-1", "data") || staged != 0 {
		t.Fatalf("reconstructed %+v, %d staged", m, staged)
	}
	// Published again, never staged; then unpublished when the pod goes.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	e.deletePod()
	want := []string{"NodePublishVolume", "NodePublishVolume", "NodeUnpublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

func TestInlineEphemeralRepublishAndStats(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(),
		driver: storagev1.CSIDriverSpec{RequiresRepublish: ptr(true), VolumeLifecycleModes: bothModes},
		inline: &corev1.CSIVolumeSource{Driver: testDriver}})
	e.runningPod()
	e.k.Resync(context.Background())
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodePublishVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v, want a republish", got)
	}
	e.k.CollectVolumeStats(context.Background())
	if len(e.node.stats) != 1 || e.node.stats[0].GetVolumeId() != InlineVolumeHandle("uid-1", "data") ||
		e.node.stats[0].GetVolumePath() != e.node.pub[0].GetTargetPath() {
		t.Errorf("stats requests %v", e.node.stats)
	}
}

func TestGenericEphemeralVolume(t *testing.T) {
	// The claim <pod>-<volume> is mounted like any claim when the pod
	// owns it.
	e := newEnv(t, envOptions{caps: stageCaps(), ephemeral: true})
	e.runningPod()
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	if got, want := e.node.pub[0].GetTargetPath(), PublishPath(e.dir, "uid-1", testPV); got != want {
		t.Errorf("target %s, want %s", got, want)
	}

	// One the pod does not own is not used.
	e = newEnv(t, envOptions{caps: stageCaps(), ephemeral: true, foreignClaim: true})
	for range 3 {
		err := e.sync("default/app")
		var again controller.RequeueAfter
		if !errors.As(err, &again) {
			t.Fatalf("sync = %v, want a requeue", err)
		}
		e.clock.Step(time.Duration(again))
	}
	if got := e.node.lifecycle(); len(got) != 0 {
		t.Errorf("calls %v for a claim the pod does not own", got)
	}
}

func TestInlineEphemeralServiceAccountTokens(t *testing.T) {
	// The CSI plugin's SetUpAt adds the driver's tokenRequests to an
	// inline volume's publish as to a persistent one's.
	e := newEnv(t, envOptions{caps: stageCaps(),
		driver: storagev1.CSIDriverSpec{VolumeLifecycleModes: bothModes, TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}},
		inline: &corev1.CSIVolumeSource{Driver: testDriver, VolumeAttributes: map[string]string{"size": "small"}}})
	e.issueTokens()
	e.runningPod()
	got := e.node.pub[0].GetVolumeContext()
	if got["size"] != "small" || tokensOf(t, got[serviceAccountTokensKey])["vault"].Token != "default/builder/[vault]/app#1" {
		t.Errorf("volume context %v, want the attributes and the vault token", got)
	}
}
