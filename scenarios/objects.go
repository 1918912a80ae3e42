package scenarios

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

// objectStore is the cluster as steps see it: objects are named the way a
// scenario names them, and an empty namespace means "default" for namespaced
// kinds. The runner only talks to the cluster through it, so tests can run
// steps against a fake.
type objectStore interface {
	// apply creates obj, or replaces it if it exists, and says which.
	apply(ctx context.Context, obj *unstructured.Unstructured, namespace string) (applied string, err error)
	// get returns the named object's content, or nil if it does not exist.
	get(ctx context.Context, ref ObjectRef, namespace string) (map[string]any, error)
	// list returns every object of a kind as a list, with its "items".
	list(ctx context.Context, kind, namespace, labelSelector string) (map[string]any, error)
	// patch patches the named object.
	patch(ctx context.Context, ref ObjectRef, namespace string, pt types.PatchType, data []byte) error
	// clusterScoped says whether objects of a kind belong to no namespace.
	clusterScoped(kind string) (bool, error)
	// delete deletes the named object; found is false if it did not exist.
	delete(ctx context.Context, ref ObjectRef, namespace string, opts deleteOpts) (found bool, err error)
}

const defaultNamespace = "default"

// discoveryRefreshInterval bounds how often a kind that discovery does not
// know triggers a fresh discovery: a wait polling for an unknown kind would
// otherwise rediscover every poll.
const discoveryRefreshInterval = time.Second

// kubeObjects is the objectStore over a real API server: a dynamic client,
// with kinds resolved through discovery.
type kubeObjects struct {
	client dynamic.Interface
	// core reads pods/log (podlogs.go), which is text, not an object;
	// nil in tests built from fakes.
	core   kubernetes.Interface
	mapper meta.RESTMapper
	clock  clock.PassiveClock

	lastReset time.Time
}

// newKubeObjects connects to the API server in cfg. Discovery is cached in
// memory and refreshed when a kind is not found, since kinds (CRDs) may be
// installed by the scenario itself.
func newKubeObjects(cfg *rest.Config, clk clock.PassiveClock) (*kubeObjects, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	k := newKubeObjectsFrom(client, disco, clk)
	k.core = core
	return k, nil
}

// newKubeObjectsFrom builds the store from clients, so tests can pass fakes.
func newKubeObjectsFrom(client dynamic.Interface, disco discovery.DiscoveryInterface, clk clock.PassiveClock) *kubeObjects {
	cached := memory.NewMemCacheClient(disco)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &kubeObjects{client: client, mapper: mapper, clock: clk}
}

// withRediscovery runs resolve, and once more after refreshing discovery if
// the kind was not known.
func (k *kubeObjects) withRediscovery(resolve func() (*meta.RESTMapping, error)) (*meta.RESTMapping, error) {
	m, err := resolve()
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	if now := k.clock.Now(); now.Sub(k.lastReset) >= discoveryRefreshInterval {
		k.lastReset = now
		meta.MaybeResetRESTMapper(k.mapper)
		return resolve()
	}
	return m, err
}

// mappingForKind resolves a kind as written in a scenario: a short name
// (pvc), plural (persistentvolumeclaims), singular (persistentvolumeclaim)
// or Kind (PersistentVolumeClaim), optionally with .group or .version.group.
func (k *kubeObjects) mappingForKind(kind string) (*meta.RESTMapping, error) {
	m, err := k.withRediscovery(func() (*meta.RESTMapping, error) {
		gvk, err := k.kindFor(kind)
		if err != nil {
			return nil, err
		}
		return k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	})
	if meta.IsNoMatchError(err) {
		return nil, &unknownKindError{kind: kind, err: err}
	}
	return m, err
}

// unknownKindError replaces the mapper's "no matches for /, Resource=x"
// with a message in the scenario's terms; meta.IsNoMatchError still holds.
type unknownKindError struct {
	kind string
	err  error
}

func (e *unknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q: the API server has no resource, short name or Kind of that name", e.kind)
}

func (e *unknownKindError) Unwrap() error { return e.err }

func (k *kubeObjects) kindFor(kind string) (schema.GroupVersionKind, error) {
	// As a resource name: "pvc", "persistentvolumeclaims", "volumeattachments.storage.k8s.io".
	fullGVR, gr := schema.ParseResourceArg(kind)
	if fullGVR != nil {
		if gvk, err := k.mapper.KindFor(*fullGVR); err == nil {
			return gvk, nil
		}
	}
	gvk, resourceErr := k.mapper.KindFor(gr.WithVersion(""))
	if resourceErr == nil {
		return gvk, nil
	}
	// As a Kind: "PersistentVolumeClaim", "VolumeAttachment.storage.k8s.io".
	fullGVK, gk := schema.ParseKindArg(kind)
	if fullGVK != nil {
		if _, err := k.mapper.RESTMapping(fullGVK.GroupKind(), fullGVK.Version); err == nil {
			return *fullGVK, nil
		}
	}
	if m, err := k.mapper.RESTMapping(gk); err == nil {
		return m.GroupVersionKind, nil
	}
	return schema.GroupVersionKind{}, resourceErr
}

// resource returns the client for mapping's resource in namespace, applying
// the default namespace to namespaced kinds and ignoring it otherwise.
func (k *kubeObjects) resource(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return k.client.Resource(m.Resource)
	}
	if namespace == "" {
		namespace = defaultNamespace
	}
	return k.client.Resource(m.Resource).Namespace(namespace)
}

func (k *kubeObjects) apply(ctx context.Context, obj *unstructured.Unstructured, namespace string) (string, error) {
	gvk := obj.GroupVersionKind()
	m, err := k.withRediscovery(func() (*meta.RESTMapping, error) {
		return k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	})
	if err != nil {
		return "", fmt.Errorf("unknown kind %s in %s: %w", gvk.Kind, gvk.GroupVersion(), err)
	}
	if ns := obj.GetNamespace(); ns != "" {
		namespace = ns
	}
	ri := k.resource(m, namespace)
	if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err == nil {
		return "created", nil
	} else if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create: %w", err)
	}
	// Replace the existing object. Controllers may update it between our
	// read and write, so retry on conflict with a fresh resourceVersion.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		update := obj.DeepCopy()
		update.SetResourceVersion(current.GetResourceVersion())
		_, err = ri.Update(ctx, update, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("update existing object: %w", err)
	}
	return "updated", nil
}

func (k *kubeObjects) clusterScoped(kind string) (bool, error) {
	m, err := k.mappingForKind(kind)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() != meta.RESTScopeNameNamespace, nil
}

func (k *kubeObjects) get(ctx context.Context, ref ObjectRef, namespace string) (map[string]any, error) {
	m, err := k.mappingForKind(ref.Kind)
	if err != nil {
		return nil, err
	}
	obj, err := k.resource(m, namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.UnstructuredContent(), nil
}

func (k *kubeObjects) list(ctx context.Context, kind, namespace, labelSelector string) (map[string]any, error) {
	m, err := k.mappingForKind(kind)
	if err != nil {
		return nil, err
	}
	list, err := k.resource(m, namespace).List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	return list.UnstructuredContent(), nil
}

func (k *kubeObjects) patch(ctx context.Context, ref ObjectRef, namespace string, pt types.PatchType, data []byte) error {
	m, err := k.mappingForKind(ref.Kind)
	if err != nil {
		return err
	}
	_, err = k.resource(m, namespace).Patch(ctx, ref.Name, pt, data, metav1.PatchOptions{})
	return err
}

// deleteOpts are how a delete step deletes.
type deleteOpts struct {
	Propagation string // Foreground, Background, Orphan or "" for the server's choice
	Force       bool   // grace period 0, as kubectl delete --force --grace-period=0
}

func (k *kubeObjects) delete(ctx context.Context, ref ObjectRef, namespace string, do deleteOpts) (bool, error) {
	m, err := k.mappingForKind(ref.Kind)
	if err != nil {
		return false, err
	}
	var opts metav1.DeleteOptions
	if do.Propagation != "" {
		policy := metav1.DeletionPropagation(do.Propagation)
		opts.PropagationPolicy = &policy
	}
	if do.Force {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	err = k.resource(m, namespace).Delete(ctx, ref.Name, opts)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
