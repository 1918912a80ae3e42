package scenarios

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/trace"
)

var (
	podsGVR           = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pvcsGVR           = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	pvsGVR            = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	namespacesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	storageClassesGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	csiDriversGVR     = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}
	widgetsGVR        = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// fakeCluster is an API server for tests: client-go's fake dynamic client
// and fake discovery, behind the real kind resolution of kubeObjects.
type fakeCluster struct {
	client    *fakedynamic.FakeDynamicClient
	discovery *fakediscovery.FakeDiscovery
	objects   *kubeObjects
}

func newFakeCluster(clk clock.PassiveClock) *fakeCluster {
	client := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		podsGVR:           "PodList",
		pvcsGVR:           "PersistentVolumeClaimList",
		pvsGVR:            "PersistentVolumeList",
		namespacesGVR:     "NamespaceList",
		storageClassesGVR: "StorageClassList",
		csiDriversGVR:     "CSIDriverList",
		widgetsGVR:        "WidgetList",
	})
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	verbs := metav1.Verbs{"create", "get", "list", "update", "delete"}
	disco.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Verbs: verbs},
			{Name: "persistentvolumeclaims", SingularName: "persistentvolumeclaim", Namespaced: true, Kind: "PersistentVolumeClaim", ShortNames: []string{"pvc"}, Verbs: verbs},
			{Name: "persistentvolumes", SingularName: "persistentvolume", Kind: "PersistentVolume", ShortNames: []string{"pv"}, Verbs: verbs},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: verbs},
		}},
		{GroupVersion: "storage.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "storageclasses", SingularName: "storageclass", Kind: "StorageClass", ShortNames: []string{"sc"}, Verbs: verbs},
			{Name: "csidrivers", SingularName: "csidriver", Kind: "CSIDriver", Verbs: verbs},
		}},
	}
	return &fakeCluster{client: client, discovery: disco, objects: newKubeObjectsFrom(client, disco, clk)}
}

// installWidgets makes a custom kind appear in discovery, as a CRD would.
func (c *fakeCluster) installWidgets() {
	c.discovery.Resources = append(c.discovery.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"create", "get", "list"}}},
	})
}

// fakeBackend is a Backend for tests; run() is given the objects directly,
// so RESTConfig is never used.
type fakeBackend struct{}

func (fakeBackend) RESTConfig() *rest.Config { return &rest.Config{Host: "http://127.0.0.1:1"} }

// fakeSimulator is a backend that also sees CSI calls.
type fakeSimulator struct {
	fakeBackend
	mu    sync.Mutex
	calls []trace.Entry
	// scripted calls are made right after the runner first asks for the
	// calls, that is, as the scenario starts.
	scripted []trace.Entry
}

func (s *fakeSimulator) CSICalls() []trace.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]trace.Entry(nil), s.calls...)
	s.calls = append(s.calls, s.scripted...)
	s.scripted = nil
	return out
}

func (s *fakeSimulator) call(method, volume string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, trace.Entry{Kind: trace.CSI, Actor: "hostpath", Verb: method, Object: volume})
}
