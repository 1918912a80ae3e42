package snapshotcontroller

import (
	"context"
	"encoding/json"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// patchOp is one operation of a JSON patch, the way the real controllers
// write (pkg/utils/patch.go).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (c *Controller) patchSnapshot(ctx context.Context, s *snapv1.VolumeSnapshot, ops []patchOp) (*snapv1.VolumeSnapshot, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return s, err
	}
	return c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Patch(ctx, s.Name, types.JSONPatchType, data, metav1.PatchOptions{})
}

func (c *Controller) patchContent(ctx context.Context, content *snapv1.VolumeSnapshotContent, ops []patchOp) (*snapv1.VolumeSnapshotContent, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return content, err
	}
	return c.snaps.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content.Name, types.JSONPatchType, data, metav1.PatchOptions{})
}
