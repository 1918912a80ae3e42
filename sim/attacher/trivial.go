package attacher

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// syncTrivially is the sidecar's trivial handler, for a driver without
// CONTROLLER_SERVICE or PUBLISH_UNPUBLISH_VOLUME
// (external-attacher pkg/controller/trivial_handler.go): it marks the
// attachment attached without calling the driver, and puts no finalizer
// on it or on its volume, so that its deletion is at once, there being
// nothing to detach. The status patch is the real one's merge patch from
// the cached attachment to one attached with no metadata and no error
// (markAsAttached): only what changes.
func (a *Attacher) syncTrivially(ctx context.Context, name string) error {
	va, err := a.vas.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || va.Status.Attached {
		return err
	}
	status := map[string]any{"attached": true}
	if len(va.Status.AttachmentMetadata) > 0 {
		status["attachmentMetadata"] = nil
	}
	if va.Status.AttachError != nil {
		status["attachError"] = nil
	}
	return a.patchStatus(ctx, name, status)
}
