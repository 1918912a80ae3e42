package daemonset

// The DaemonSet's revisions: a ControllerRevision per pod template it has
// had, whose hash labels the pods made from it (kubernetes
// pkg/controller/daemon/update.go constructHistory, snapshot, getPatch).

import (
	"bytes"
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/deployment"
)

// revisionPatch is what a revision stores: the template as a strategic
// merge patch that replaces it (getPatch).
func revisionPatch(ds *appsv1.DaemonSet) ([]byte, error) {
	return controller.TemplateRevisionPatch(ds.Spec.Template)
}

// currentRevision finds the revision of ds's template among those ds
// controls, or makes it, numbered one above the others; an existing one
// older than another is renumbered so (constructHistory). It returns the
// template's hash. Not modelled: the history limit's clean-up, the
// deduplication of equal revisions, and the collision count.
func (c *Controller) currentRevision(ctx context.Context, ds *appsv1.DaemonSet) (string, error) {
	patch, err := revisionPatch(ds)
	if err != nil {
		return "", err
	}
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return "", err
	}
	var current *appsv1.ControllerRevision
	maxOld := int64(0)
	for _, r := range all {
		if !metav1.IsControlledBy(r, ds) {
			continue
		}
		if current == nil && bytes.Equal(r.Data.Raw, patch) {
			current = r
			continue
		}
		maxOld = max(maxOld, r.Revision)
	}
	hash := deployment.PodTemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	if current != nil {
		if current.Revision <= maxOld {
			r := current.DeepCopy()
			r.Revision = maxOld + 1
			if _, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, r, metav1.UpdateOptions{}); err != nil {
				return "", fmt.Errorf("renumbering revision %s: %w", r.Name, err)
			}
		}
		if h := current.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			return h, nil
		}
		return hash, nil
	}
	lbls := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: lbls, Annotations: ds.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: maxOld + 1,
	}
	_, err = c.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, r, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating revision %s: %w", r.Name, err)
	}
	return hash, nil
}
