package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testingclock "k8s.io/utils/clock/testing"
)

func TestKubeObjectsResolvesKinds(t *testing.T) {
	c := newFakeCluster(testingclock.NewFakeClock(time.Now()))
	tests := []struct {
		kind string
		want string // resource.group
	}{
		{"pvc", "persistentvolumeclaims"},
		{"persistentvolumeclaims", "persistentvolumeclaims"},
		{"persistentvolumeclaim", "persistentvolumeclaims"},
		{"PersistentVolumeClaim", "persistentvolumeclaims"},
		{"pv", "persistentvolumes"},
		{"po", "pods"},
		{"sc", "storageclasses.storage.k8s.io"},
		{"storageclasses.storage.k8s.io", "storageclasses.storage.k8s.io"},
		{"storageclasses.v1.storage.k8s.io", "storageclasses.storage.k8s.io"},
		{"CSIDriver", "csidrivers.storage.k8s.io"},
		{"csidriver", "csidrivers.storage.k8s.io"},
	}
	for _, tt := range tests {
		m, err := c.objects.mappingForKind(tt.kind)
		if err != nil {
			t.Errorf("%s: %v", tt.kind, err)
			continue
		}
		if got := m.Resource.GroupResource().String(); got != tt.want {
			t.Errorf("%s resolved to %s, want %s", tt.kind, got, tt.want)
		}
	}
	if _, err := c.objects.mappingForKind("pvcs"); err == nil {
		t.Error("pvcs resolved; want an error")
	}
}

func TestKubeObjectsRediscoversNewKinds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := newFakeCluster(clk)
	if _, err := c.objects.mappingForKind("widget"); err == nil {
		t.Fatal("widget resolved before it was installed")
	}
	c.installWidgets()
	clk.Step(discoveryRefreshInterval / 2)
	if _, err := c.objects.mappingForKind("widget"); err == nil {
		t.Error("discovery was refreshed again within the refresh interval")
	}
	clk.Step(discoveryRefreshInterval)
	if _, err := c.objects.mappingForKind("widget"); err != nil {
		t.Errorf("widget after rediscovery: %v", err)
	}
}

func configMapLike(kind, apiVersion, name string, extra map[string]any) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	for k, v := range extra {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestKubeObjectsApplyGetListDelete(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster(testingclock.NewFakeClock(time.Now()))
	o := c.objects

	// Create, then replace.
	pvc := configMapLike("PersistentVolumeClaim", "v1", "data", map[string]any{"spec": map[string]any{"storageClassName": "a"}})
	if got, err := o.apply(ctx, pvc.DeepCopy(), ""); err != nil || got != "created" {
		t.Fatalf("first apply = %q, %v", got, err)
	}
	pvc.Object["spec"] = map[string]any{"storageClassName": "b"}
	if got, err := o.apply(ctx, pvc.DeepCopy(), ""); err != nil || got != "updated" {
		t.Fatalf("second apply = %q, %v", got, err)
	}
	obj, err := o.get(ctx, ObjectRef{Kind: "pvc", Name: "data"}, "")
	if err != nil || obj == nil {
		t.Fatalf("get = %v, %v", obj, err)
	}
	if got, _ := evalJSONPath("{.metadata.namespace}/{.spec.storageClassName}", obj); got != "default/b" {
		t.Errorf("after update: %s, want default/b", got)
	}

	// Namespaces: the step's namespace, unless the manifest names one;
	// cluster-scoped kinds ignore it.
	if _, err := o.apply(ctx, configMapLike("PersistentVolumeClaim", "v1", "other", nil), "team"); err != nil {
		t.Fatal(err)
	}
	explicit := configMapLike("PersistentVolumeClaim", "v1", "explicit", nil)
	explicit.SetNamespace("mine")
	if _, err := o.apply(ctx, explicit, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.apply(ctx, configMapLike("PersistentVolume", "v1", "pv-1", nil), "team"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref ObjectRef
		ns  string
	}{
		{ObjectRef{"pvc", "other"}, "team"},
		{ObjectRef{"pvc", "explicit"}, "mine"},
		{ObjectRef{"pv", "pv-1"}, "ignored"},
	} {
		if obj, err := o.get(ctx, tt.ref, tt.ns); err != nil || obj == nil {
			t.Errorf("get %s in %s = %v, %v", tt.ref, tt.ns, obj, err)
		}
	}
	if obj, err := o.get(ctx, ObjectRef{"pvc", "other"}, ""); err != nil || obj != nil {
		t.Errorf("pvc/other found in the default namespace: %v, %v", obj, err)
	}

	// Lists, with and without a label selector.
	labelled := configMapLike("PersistentVolume", "v1", "pv-2", nil)
	labelled.SetLabels(map[string]string{"tier": "fast"})
	if _, err := o.apply(ctx, labelled, ""); err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{"": "pv-1 pv-2", "tier=fast": "pv-2", "tier=slow": ""} {
		list, err := o.list(ctx, "persistentvolumes", "", sel)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := evalJSONPath("{.items[*].metadata.name}", list); got != want {
			t.Errorf("list with %q = %q, want %q", sel, got, want)
		}
	}

	// Delete: found, then not.
	if found, err := o.delete(ctx, ObjectRef{"pv", "pv-1"}, "", deleteOpts{Propagation: "Foreground"}); err != nil || !found {
		t.Errorf("delete = %v, %v", found, err)
	}
	if found, err := o.delete(ctx, ObjectRef{"pv", "pv-1"}, "", deleteOpts{}); err != nil || found {
		t.Errorf("second delete = %v, %v; want not found", found, err)
	}
	if obj, err := o.get(ctx, ObjectRef{"pv", "pv-1"}, ""); err != nil || obj != nil {
		t.Errorf("deleted pv still there: %v, %v", obj, err)
	}
	deletes := 0
	for _, a := range c.client.Actions() {
		if a.GetVerb() == "delete" {
			deletes++
		}
	}
	if deletes != 2 {
		t.Errorf("saw %d delete calls, want 2", deletes)
	}
}

func TestKubeObjectsApplyUnknownKind(t *testing.T) {
	c := newFakeCluster(testingclock.NewFakeClock(time.Now()))
	_, err := c.objects.apply(context.Background(), configMapLike("Gadget", "example.com/v1", "g", nil), "")
	if err == nil || !strings.Contains(err.Error(), "unknown kind Gadget in example.com/v1") {
		t.Errorf("apply of an unknown kind: %v", err)
	}
}

func TestKubeObjectsDeleteOptions(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster(testingclock.NewFakeClock(time.Now()))
	if _, err := c.objects.apply(ctx, configMapLike("Pod", "v1", "app", nil), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.objects.delete(ctx, ObjectRef{"pod", "app"}, "", deleteOpts{Propagation: "Background"}); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.client.Actions() {
		if d, ok := a.(interface{ GetDeleteOptions() metav1.DeleteOptions }); ok {
			p := d.GetDeleteOptions().PropagationPolicy
			if p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("propagation = %v, want Background", p)
			}
			return
		}
	}
	t.Error("no delete action recorded")
}
