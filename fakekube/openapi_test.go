package fakekube

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// schemaOfKind finds the component schema kubectl finds for gvk: the one
// whose x-kubernetes-group-version-kind is gvk alone.
func schemaOfKind(schemas map[string]*spec.Schema, gvk schema.GroupVersionKind) *spec.Schema {
	for _, s := range schemas {
		list, _ := s.Extensions["x-kubernetes-group-version-kind"].([]any)
		if len(list) != 1 {
			continue
		}
		m, _ := list[0].(map[string]any)
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return s
		}
	}
	return nil
}

// TestOpenAPIV3HasTheSchemaOfEveryKind: each group version's document
// has, for each of its kinds (the snapshot CRDs' too), the schema kubectl
// looks up by group-version-kind, with properties.
func TestOpenAPIV3HasTheSchemaOfEveryKind(t *testing.T) {
	srv := New(Options{})
	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(serveHTTP(t, srv)).OpenAPIV3())
	for _, r := range srv.reg.all {
		t.Run(r.gvk().String(), func(t *testing.T) {
			doc, err := root.GVSpec(r.gvr.GroupVersion())
			if err != nil {
				t.Fatal(err)
			}
			if doc.Components == nil {
				t.Fatal("no components")
			}
			s := schemaOfKind(doc.Components.Schemas, r.gvk())
			if s == nil {
				t.Fatalf("no schema for %s among %d", r.gvk(), len(doc.Components.Schemas))
			}
			if _, ok := s.Properties["metadata"]; !ok {
				t.Errorf("schema of %s has no metadata property: %v", r.kind, s.Properties)
			}
			if schemaOfKind(doc.Components.Schemas, r.listGVK()) == nil {
				t.Errorf("no schema for %s", r.listGVK())
			}
		})
	}
}

// TestClientSideApplyPatchFromOpenAPIV3 computes a patch as kubectl apply
// does from the served schema: a changed container image is merged into
// the list by the containers' merge key (name), not replacing the list.
func TestClientSideApplyPatchFromOpenAPIV3(t *testing.T) {
	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(serveHTTP(t, New(Options{}))).OpenAPIV3())
	doc, err := root.GVSpec(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	pod := schemaOfKind(doc.Components.Schemas, corev1.SchemeGroupVersion.WithKind("Pod"))
	if pod == nil {
		t.Fatal("no Pod schema")
	}
	podWith := func(image string, extra ...corev1.Container) []byte {
		p := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Spec: corev1.PodSpec{Containers: append([]corev1.Container{{Name: "app", Image: image}}, extra...)}}
		data, _ := json.Marshal(p)
		return data
	}
	current := podWith("busybox", corev1.Container{Name: "sidecar", Image: "injected"})
	patch, err := strategicpatch.CreateThreeWayMergePatch(podWith("busybox"), podWith("busybox:2"), current,
		strategicpatch.PatchMetaFromOpenAPIV3{Schema: pod, SchemaList: doc.Components.Schemas}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Without the merge key the patch would replace the list, dropping the sidecar.
	const want = `{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":[{"image":"busybox:2","name":"app"}]}}`
	if string(patch) != want {
		t.Errorf("patch\n %s\nwant\n %s", patch, want)
	}
}

// TestOpenAPIV2Definitions: /openapi/v2, in the protobuf kubectl asks
// for, has the definitions, with their descriptions.
func TestOpenAPIV2Definitions(t *testing.T) {
	doc, err := discovery.NewDiscoveryClientForConfigOrDie(serveHTTP(t, New(Options{}))).OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range doc.GetDefinitions().GetAdditionalProperties() {
		if def.GetName() != "io.k8s.api.core.v1.PersistentVolumeClaimSpec" {
			continue
		}
		for _, p := range def.GetValue().GetProperties().GetAdditionalProperties() {
			if p.GetName() == "accessModes" && strings.Contains(p.GetValue().GetDescription(), "access modes") {
				return
			}
		}
		t.Fatalf("PersistentVolumeClaimSpec has no described accessModes: %v", def.GetValue())
	}
	t.Fatalf("no PersistentVolumeClaimSpec among %d definitions", len(doc.GetDefinitions().GetAdditionalProperties()))
}
