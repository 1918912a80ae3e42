package provisioner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// CloneFinalizer protects a claim that is the source of a clone: the
// sidecar adds it to the source before it asks for the clone, and its
// cloning-protection controller removes it once the source is being
// deleted and no claim cloned from it is Pending any more.
const CloneFinalizer = "provisioner.storage.kubernetes.io/cloning-protection"

// protectCloneSource adds the cloning finalizer to the source claim.
func (p *Provisioner) protectCloneSource(ctx context.Context, namespace, name string) error {
	src, err := p.claims.PersistentVolumeClaims(namespace).Get(name)
	if err != nil {
		return err
	}
	if slices.Contains(src.Finalizers, CloneFinalizer) {
		return nil
	}
	next := src.DeepCopy()
	next.Finalizers = append(next.Finalizers, CloneFinalizer)
	_, err = p.client.CoreV1().PersistentVolumeClaims(namespace).Update(ctx, next, metav1.UpdateOptions{})
	return err
}

// enqueueDeletedClaim queues claims being deleted for the cloning
// protection.
func (p *Provisioner) enqueueDeletedClaim(obj any) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || claim.DeletionTimestamp == nil {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(claim); err == nil {
		p.cloneQ.Add(key)
	}
}

// syncCloneSource removes the cloning finalizer from a claim being
// deleted, once no claim cloned from it is still Pending; until then it
// fails, and is tried again with backoff.
func (p *Provisioner) syncCloneSource(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !slices.Contains(claim.Finalizers, CloneFinalizer) {
		return nil
	}
	all, err := p.claims.PersistentVolumeClaims(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, c := range all {
		ds := c.Spec.DataSource
		if ds != nil && ds.Kind == "PersistentVolumeClaim" && ds.Name == name && c.Status.Phase == corev1.ClaimPending {
			return fmt.Errorf("PVC '%s' is in 'Pending' state, cloning in progress", c.Name)
		}
	}
	next := claim.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == CloneFinalizer })
	if _, err := p.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the cloning finalizer from PVC %s: %w", key, err)
	}
	return nil
}
