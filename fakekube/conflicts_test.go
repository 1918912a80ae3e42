package fakekube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The real API server's message for a write based on a stale object.
const modifiedMessage = `Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; please apply your changes to the latest version and try again`

func TestRefuseConflicting(t *testing.T) {
	ctx := context.Background()
	// Each conditional write starts from the claim as it is now.
	type claims = typedcorev1.PersistentVolumeClaimInterface
	fromCurrent := func(write func(claims, *corev1.PersistentVolumeClaim) error) func(cs kubernetes.Interface) error {
		return func(cs kubernetes.Interface) error {
			c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				return err
			}
			return write(cs.CoreV1().PersistentVolumeClaims("default"), c)
		}
	}
	writes := map[string]func(cs kubernetes.Interface) error{
		"update with resourceVersion": fromCurrent(func(pvcs claims, c *corev1.PersistentVolumeClaim) error {
			c.Labels = map[string]string{"n": c.ResourceVersion}
			_, err := pvcs.Update(ctx, c, metav1.UpdateOptions{})
			return err
		}),
		"status update": fromCurrent(func(pvcs claims, c *corev1.PersistentVolumeClaim) error {
			c.Status.Phase = "Lost"
			_, err := pvcs.UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}),
		"merge patch with resourceVersion": fromCurrent(func(pvcs claims, c *corev1.PersistentVolumeClaim) error {
			patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"p":"1"}}}`, c.ResourceVersion)
			_, err := pvcs.Patch(ctx, "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}),
		"json patch testing resourceVersion": fromCurrent(func(pvcs claims, c *corev1.PersistentVolumeClaim) error {
			patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/labels","value":{"j":"1"}}]`, c.ResourceVersion)
			_, err := pvcs.Patch(ctx, "data", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}),
	}
	unconditional := map[string]func(cs kubernetes.Interface) error{
		"create": func(cs kubernetes.Interface) error {
			_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("other"), metav1.CreateOptions{})
			return err
		},
		"strategic patch without resourceVersion": func(cs kubernetes.Interface) error {
			_, err := cs.CoreV1().PersistentVolumeClaims("default").Patch(ctx, "data", types.StrategicMergePatchType,
				[]byte(`{"metadata":{"labels":{"s":"1"}}}`), metav1.PatchOptions{})
			return err
		},
		"delete": func(cs kubernetes.Interface) error {
			return cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{})
		},
	}

	for name, write := range writes {
		t.Run("refused: "+name, func(t *testing.T) {
			var refused []Write
			var refusedErrs []error
			srv := New(Options{Seed: 1, OnRefused: func(w Write, err error) {
				refused = append(refused, w)
				refusedErrs = append(refusedErrs, err)
			}})
			cs := client(t, srv, "external-provisioner")
			other := client(t, srv, "persistentvolume-binder")
			if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			srv.RefuseConflicting("external-provisioner", 2)
			if err := write(other); err != nil {
				t.Fatalf("another component's write was refused: %v", err)
			}
			for i := 0; i < 2; i++ {
				err := write(cs)
				if !apierrors.IsConflict(err) {
					t.Fatalf("write %d: %v, want 409 Conflict", i+1, err)
				}
				if err.Error() != modifiedMessage {
					t.Errorf("write %d: message %q, want %q", i+1, err.Error(), modifiedMessage)
				}
			}
			if err := write(cs); err != nil {
				t.Fatalf("the third write was refused too: %v", err)
			}
			if len(refused) != 2 || refused[0].Actor != "external-provisioner" || refused[0].Name != "data" ||
				refused[0].Kind != "PersistentVolumeClaim" || !apierrors.IsConflict(refusedErrs[0]) {
				t.Errorf("OnRefused heard %+v, want the two refused writes of data", refused)
			}
			if n := srv.PendingRefusals("external-provisioner"); n != 0 {
				t.Errorf("%d refusals left, want 0", n)
			}
		})
	}
	for name, write := range unconditional {
		t.Run("not refused: "+name, func(t *testing.T) {
			srv := New(Options{Seed: 1})
			cs := client(t, srv, "external-provisioner")
			if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			srv.RefuseConflicting("external-provisioner", 1)
			if err := write(cs); err != nil {
				t.Fatalf("a write without resourceVersion was refused: %v", err)
			}
			if n := srv.PendingRefusals("external-provisioner"); n != 1 {
				t.Errorf("%d refusals left, want 1: a write that cannot conflict is not counted", n)
			}
		})
	}
}

func TestRefuseConflictingZeroEnds(t *testing.T) {
	srv := New(Options{Seed: 1})
	srv.RefuseConflicting("a", 3)
	srv.RefuseConflicting("a", 0)
	if n := srv.PendingRefusals("a"); n != 0 {
		t.Errorf("%d refusals left after RefuseConflicting(a, 0)", n)
	}
}

func client(t *testing.T, srv *Server, userAgent string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig(userAgent))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
