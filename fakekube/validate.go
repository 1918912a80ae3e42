package fakekube

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
)

// Preparation and validation are kube-apiserver's own: the kind's
// registry strategy run the way its generic registry runs it
// (k8s.io/apiserver pkg/registry/rest, BeforeCreate and BeforeUpdate: the
// strategy's PrepareFor*, its validation, ObjectMeta's, the declarative
// validation, the warnings, Canonicalize) on the object as the real server
// holds it — in the internal version, or for a custom kind unstructured
// after the custom resource decoder's pruning — and what it leaves is what
// fakekube stores, back in v1 and defaulted as a read from etcd is. A
// refusal is the real server's: 422 Invalid with the same causes and
// message.

// validationUID stands in for the UID the registry gives a new object
// before its strategy runs (rest.FillObjectMetaSystemFields); fakekube
// draws the stored one from its seeded generator once the object is
// accepted, so that a refused create takes no UID from the run.
const validationUID = "00000000-0000-4000-8000-000000000000"

// prepareCreate returns obj, about to be created, as the kind's strategy
// prepares it, or the real server's refusal.
func prepareCreate(ctx context.Context, res *resource, namespace string, obj runtime.Object, now metav1.Time) (runtime.Object, error) {
	st, err := strategyFor(res)
	if err != nil {
		return nil, err
	}
	in, err := asServerHolds(res, st, obj, true)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(in)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	m.SetCreationTimestamp(now)
	m.SetUID(validationUID)
	if err := rest.BeforeCreate(st.main, requestContext(ctx, res, namespace, "create", ""), in); err != nil {
		return nil, err
	}
	stampClock(in, now, true)
	return asStored(res, in)
}

// prepareUpdate returns obj, replacing old (the main resource, or with
// subresource "status" its status), as the kind's strategy prepares it, or
// the real server's refusal.
func prepareUpdate(ctx context.Context, res *resource, namespace, subresource string, obj, old runtime.Object, now metav1.Time) (runtime.Object, error) {
	st, err := strategyFor(res)
	if err != nil {
		return nil, err
	}
	var strategy rest.RESTUpdateStrategy = st.main
	if subresource == "status" {
		strategy = st.status
	}
	if strategy == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s has no %s strategy", res.gvr.Resource, subresource))
	}
	in, err := asServerHolds(res, st, obj, true)
	if err != nil {
		return nil, err
	}
	was, err := asServerHolds(res, st, old, false)
	if err != nil {
		return nil, err
	}
	if err := rest.BeforeUpdate(strategy, requestContext(ctx, res, namespace, "update", subresource), in, was); err != nil {
		return nil, err
	}
	stampClock(in, now, false)
	return asStored(res, in)
}

// strategyClockMark is what the PersistentVolume strategies read as the
// time (fakekube sets the upstream package's NowFunc to it): stampClock
// then puts the server's clock where they stamped it, so that a run on
// the virtual clock stays deterministic.
var strategyClockMark = metav1.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC)

func init() { persistentvolume.NowFunc = func() metav1.Time { return strategyClockMark } }

// stampClock gives the times a strategy stamped from the real clock the
// server's: a PersistentVolume's lastPhaseTransitionTime (its strategies'
// NowFunc), and the conditions of a new Pod (the SchedulingGated one,
// stamped with metav1.Now: a new pod's status is the strategy's alone).
func stampClock(in runtime.Object, now metav1.Time, created bool) {
	switch o := in.(type) {
	case *core.PersistentVolume:
		if t := o.Status.LastPhaseTransitionTime; t != nil && t.Equal(&strategyClockMark) {
			o.Status.LastPhaseTransitionTime = &now
		}
	case *core.Pod:
		if created {
			for i := range o.Status.Conditions {
				o.Status.Conditions[i].LastTransitionTime = now
			}
		}
	}
}

// strategyFor is the kind's strategy: a built-in one, or one built from
// a CRD.
func strategyFor(res *resource) (strategy, error) {
	if st, ok := builtinStrategies[res.gvr]; ok {
		return st, nil
	}
	custom, err := crdStrategies()
	if err != nil {
		return strategy{}, apierrors.NewInternalError(err)
	}
	if st, ok := custom[res.gvr]; ok {
		return st, nil
	}
	return strategy{}, apierrors.NewInternalError(fmt.Errorf("no strategy for %s", res.gvr))
}

// asServerHolds returns obj (defaulted) as kube-apiserver's registry holds
// it: a built-in kind in the internal version; a custom kind unstructured,
// pruned as the custom resource decoder prunes it. The result shares
// memory with obj when owned says obj is the caller's to give away (a
// request's body); otherwise obj (a stored object) is left untouched.
func asServerHolds(res *resource, st strategy, obj runtime.Object, owned bool) (runtime.Object, error) {
	if res.crd {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		st.decode(u)
		out := &unstructured.Unstructured{Object: u}
		out.SetGroupVersionKind(res.gvk())
		return out, nil
	}
	if !owned {
		obj = obj.DeepCopyObject()
	}
	in, err := legacyscheme.Scheme.UnsafeConvertToVersion(obj, internalVersion(res))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return in, nil
}

// asStored turns what the strategy left back into the served version, as
// the server stores it and a read from etcd returns it: defaulted.
func asStored(res *resource, in runtime.Object) (runtime.Object, error) {
	if u, ok := in.(*unstructured.Unstructured); ok {
		out, err := scheme.New(res.gvk())
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return out, nil
	}
	out, err := legacyscheme.Scheme.UnsafeConvertToVersion(in, res.gvr.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	legacyscheme.Scheme.Default(out)
	return out, nil
}

func internalVersion(res *resource) schema.GroupVersion {
	return schema.GroupVersion{Group: res.gvr.Group, Version: runtime.APIVersionInternal}
}

// requestContext is what kube-apiserver's handlers put in a request's
// context for its registry: the namespace, and what the request is (the
// Event strategy tells the two Event APIs apart by it). Its logger
// discards: what the registry logs is about itself (a duplicated cause, a
// declarative rule that disagrees with the hand-written one), which the
// real server writes to its own log; fakekube has none, and csisim's
// stderr is its user's.
func requestContext(ctx context.Context, res *resource, namespace, verb, subresource string) context.Context {
	ctx = klog.NewContext(ctx, logr.Discard())
	prefix := "apis"
	if res.gvr.Group == "" {
		prefix = "api"
	}
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: verb,
		APIPrefix: prefix, APIGroup: res.gvr.Group, APIVersion: res.gvr.Version, Namespace: namespace,
		Resource: res.gvr.Resource, Subresource: subresource})
}
