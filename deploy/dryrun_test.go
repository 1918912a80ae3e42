package deploy

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigEnv names the kubeconfig of a real API server to dry-run the
// manifests against: a realkube control plane, or the kind cluster of
// e2e/kind/run.sh (which sets it).
const KubeconfigEnv = "CSISIM_REALKUBE_KUBECONFIG"

// TestServerSideDryRun applies every manifest (deployment, variant and the
// seed sweep Job) with
// server-side apply and dryRun=All: the API server validates and admits
// each object — defaulting, validation, admission plugins, and, where the
// objects exist already, the update rules for immutable fields — and
// persists nothing.
//
// Namespaced objects need their namespace to exist, even in a dry run; if
// Namespace does not exist on the server, the test creates a throwaway
// namespace with the same labels for them and deletes it afterwards. That
// is the only write it makes.
func TestServerSideDryRun(t *testing.T) {
	kubeconfig := os.Getenv(KubeconfigEnv)
	if kubeconfig == "" {
		t.Skipf("%s is not set: no real API server to dry-run the manifests against (point it at the kubeconfig of a realkube control plane or of a cluster)", KubeconfigEnv)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "csisim-deploy-dryrun"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	base := load(t, basePattern)
	ns := Namespace
	if _, err := client.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		tmp := one[*corev1.Namespace](t, base).DeepCopy()
		tmp.Name, tmp.GenerateName = "", Namespace+"-dryrun-"
		created, err := client.CoreV1().Namespaces().Create(ctx, tmp, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create a namespace for the namespaced objects: %v", err)
		}
		ns = created.Name
		t.Cleanup(func() {
			if err := client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete namespace %s: %v", ns, err)
			}
		})
		t.Logf("namespace %s does not exist on the server; namespaced objects are dry-run in %s", Namespace, ns)
	} else if err != nil {
		t.Fatal(err)
	}

	for _, m := range slices.Concat(base, load(t, variantPattern), load(t, builtHerePattern), load(t, seedSweepPattern)) {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.json, &u.Object); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) && gvk.Group == snapshotv1.GroupName {
			t.Logf("%s: skipped: the server does not serve %s (the snapshot CRDs are a cluster add-on)", m, gvk.GroupVersion())
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", m, err)
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if clusterScoped[gvk.Kind] {
				t.Errorf("%s: namespaced on the server, but the tests take %s for cluster-scoped", m, gvk.Kind)
			}
			u.SetNamespace(ns)
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		} else if !clusterScoped[gvk.Kind] {
			t.Errorf("%s: cluster-scoped on the server, but not in clusterScoped of the tests", m)
		}
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		force := true
		_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "csisim-deploy-dryrun",
			Force:        &force,
			DryRun:       []string{metav1.DryRunAll},
		})
		if err != nil {
			t.Errorf("%s: server-side dry run: %v", m, err)
		}
	}

	// A scenario's `apply` of the library's CSIDriver and StorageClass
	// replaces (Update) the deployed objects of the same names; with the
	// deployment in place, check that the server takes that update.
	t.Run("ScenarioLibraryReplacesDeployment", func(t *testing.T) {
		lib, err := loadLibraryDriver(t)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, m := range lib {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(m.json, &u.Object); err != nil {
				t.Fatal(err)
			}
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil || mapping.Scope.Name() != meta.RESTScopeNameRoot {
				continue
			}
			ri := dyn.Resource(mapping.Resource)
			current, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if current.GetLabels()[PartOfLabel] != PartOf {
				continue // not ours
			}
			u.SetResourceVersion(current.GetResourceVersion())
			if _, err := ri.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: replacing the deployed object fails: %v", m, err)
			}
			checked++
		}
		if checked == 0 {
			t.Skip("the deployment is not applied on this server (no CSIDriver/StorageClass of it)")
		}
	})
}
