package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A change wakes only the waiting pods it concerns: those using a claim
// that changed, or whose volume or attachment to this node changed; this
// node's status wakes all of them; other nodes' objects wake none.
func TestWakeIsTargeted(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	ctx := context.Background()
	other := e.pod.DeepCopy()
	other.Name, other.UID = "other", "uid-2"
	other.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "other-claim"
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the second pod", func() bool { _, err := e.k.pods.Pods("default").Get("other"); return err == nil })

	for _, tc := range []struct {
		name   string
		change func() error
		seen   func() bool
		want   []string
	}{
		{"the claim of one pod", func() error {
			c, _ := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
			c.Labels = map[string]string{"changed": "1"}
			_, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, c, metav1.UpdateOptions{})
			return err
		}, func() bool {
			c, err := e.k.claims.PersistentVolumeClaims("default").Get("data")
			return err == nil && c.Labels["changed"] == "1"
		},
			[]string{"default/app"}},
		{"a claim no pod here uses", func() error {
			_, err := e.client.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default"}}, metav1.CreateOptions{})
			return err
		}, func() bool {
			_, err := e.k.claims.PersistentVolumeClaims("default").Get("elsewhere")
			return err == nil
		}, nil},
		{"the volume bound to one pod's claim", func() error {
			pv, _ := e.client.CoreV1().PersistentVolumes().Get(ctx, testPV, metav1.GetOptions{})
			pv.Labels = map[string]string{"changed": "1"}
			_, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
			return err
		}, func() bool { pv, err := e.k.volumes.Get(testPV); return err == nil && pv.Labels["changed"] == "1" },
			[]string{"default/app"}},
		{"another node", func() error {
			_, err := e.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}, metav1.CreateOptions{})
			return err
		}, func() bool { _, err := e.k.nodes.Get("node-x"); return err == nil }, nil},
		{"an attachment to another node", func() error {
			name := testPV
			_, err := e.client.StorageV1().VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-x"},
				Spec: storagev1.VolumeAttachmentSpec{NodeName: "node-x", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &name}}}, metav1.CreateOptions{})
			return err
		}, func() bool { _, err := e.k.vas.Get("va-x"); return err == nil }, nil},
		{"this node", func() error {
			n, _ := e.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
			n.Labels = map[string]string{"changed": "1"}
			_, err := e.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}, func() bool { n, err := e.k.nodes.Get(testNode); return err == nil && n.Labels["changed"] == "1" },
			[]string{"default/app", "default/other"}},
	} {
		e.drainQueue()
		if err := tc.change(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		e.waitFor(tc.name, tc.seen)
		if got := e.wokenBy(tc.want); !slices.Equal(got, tc.want) {
			t.Errorf("%s woke %v, want %v", tc.name, got, tc.want)
		}
	}
}

// wokenBy collects the keys the kubelet's queue receives after a change
// its caches have seen. The informers' handlers run after their caches are
// updated, each informer in a goroutine of its own, so it waits (up to 10 s,
// for a loaded machine) until the keys want names have all come, and then
// a moment more for any it should not have woken.
func (e *env) wokenBy(want []string) []string {
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		got = append(got, e.drainQueue()...)
		if !slices.ContainsFunc(want, func(k string) bool { return !slices.Contains(got, k) }) {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	got = append(got, e.drainQueue()...)
	slices.Sort(got)
	return slices.Compact(got)
}

// drainQueue empties the kubelet's queue and returns the keys it held, sorted.
func (e *env) drainQueue() []string {
	var keys []string
	for e.k.queue.Len() > 0 {
		key, _ := e.k.queue.Get()
		e.k.queue.Done(key)
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}
