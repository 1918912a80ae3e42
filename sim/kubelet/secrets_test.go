package kubelet

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withSecretRefs gives the env's PV node stage and publish secret
// references, in the API server and the informer's cache.
func (e *env) withSecretRefs() {
	e.t.Helper()
	ctx := context.Background()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, testPV, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pv.Spec.CSI.NodeStageSecretRef = &corev1.SecretReference{Namespace: "storage", Name: "stage-creds"}
	pv.Spec.CSI.NodePublishSecretRef = &corev1.SecretReference{Namespace: "storage", Name: "publish-creds"}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the PV's secret references", func() bool {
		got, err := e.k.volumes.Get(testPV)
		return err == nil && got.Spec.CSI.NodePublishSecretRef != nil
	})
}

func (e *env) createSecret(name, key, value string) {
	e.t.Helper()
	if _, err := e.client.CoreV1().Secrets("storage").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: name},
		Data:       map[string][]byte{key: []byte(value)}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// A missing node stage secret fails MountDevice, a missing publish secret
// SetUp, each in the kubelet's words and retried with the volume's
// backoff; once they exist the calls carry their data.
func TestNodeSecrets(t *testing.T) {
	for _, block := range []bool{false, true} {
		e := newEnv(t, envOptions{caps: stageCaps(), block: block})
		e.withSecretRefs()
		stageFailed, publishFailed := "FailedMount", "FailedMount"
		stageMsg := `MountVolume.MountDevice failed for volume "pv-1" : fetching NodeStageSecretRef storage/stage-creds failed: ` +
			`kubernetes.io/csi: failed to find the secret stage-creds in the namespace storage with error: secrets "stage-creds" not found`
		publishMsg := `MountVolume.SetUp failed for volume "pv-1" : fetching NodePublishSecretRef storage/publish-creds failed: ` +
			`kubernetes.io/csi: failed to find the secret publish-creds in the namespace storage with error: secrets "publish-creds" not found`
		if block {
			stageFailed, publishFailed = "FailedMapVolume", "FailedMapVolume"
			stageMsg = `MapVolume.SetUpDevice failed for volume "pv-1" : kubernetes.io/csi: failed to get NodeStageSecretRef storage/stage-creds: ` +
				`kubernetes.io/csi: failed to find the secret stage-creds in the namespace storage with error: secrets "stage-creds" not found`
			publishMsg = `MapVolume.MapPodDevice failed for volume "pv-1" : kubernetes.io/csi: blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef storage/publish-creds: ` +
				`kubernetes.io/csi: failed to find the secret publish-creds in the namespace storage with error: secrets "publish-creds" not found`
		}
		lastEvent := func(reason, msg string) {
			t.Helper()
			evs := e.events()
			if !slices.ContainsFunc(evs, func(ev corev1.Event) bool { return ev.Reason == reason && ev.Message == msg }) {
				t.Fatalf("block=%v: events %+v, want %s %q", block, evs, reason, msg)
			}
		}
		err := e.sync("default/app")
		d, ok := requeuedAfter(err)
		if !ok || d != volumeRetryInitial {
			t.Fatalf("block=%v: sync = %v, want a retry after the volume's first backoff", block, err)
		}
		lastEvent(stageFailed, stageMsg)
		if got := e.node.lifecycle(); len(got) != 0 {
			t.Fatalf("block=%v: the node plugin was called without its secret: %v", block, got)
		}

		e.createSecret("stage-creds", "key", "stage-value")
		e.clock.Step(d)
		err = e.sync("default/app")
		if _, ok := requeuedAfter(err); !ok {
			t.Fatalf("block=%v: sync = %v, want a retry", block, err)
		}
		lastEvent(publishFailed, publishMsg)
		if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume"}) {
			t.Fatalf("block=%v: calls %v, want only the stage", block, got)
		}
		if got := e.node.stage[0].GetSecrets(); len(got) != 1 || got["key"] != "stage-value" {
			t.Errorf("block=%v: NodeStageVolume secrets %v", block, got)
		}

		e.createSecret("publish-creds", "token", "publish-value")
		e.syncUntilRunning()
		if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
			t.Fatalf("block=%v: calls %v", block, got)
		}
		if got := e.node.pub[0].GetSecrets(); len(got) != 1 || got["token"] != "publish-value" {
			t.Errorf("block=%v: NodePublishVolume secrets %v", block, got)
		}
	}
}
