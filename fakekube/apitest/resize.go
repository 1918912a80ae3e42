package apitest

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// claimResize checks what the API server lets a claim's storage request
// do: grow only when bound and its class allows expansion (403 from the
// PersistentVolumeClaimResize admission plugin otherwise), change at all
// only when bound (422 from validation), go down only while it stays above
// status.capacity (recovery from a failed expansion); and what it checks
// in the resize status a resizer writes.
func claimResize(t *testing.T, e *env) {
	scs := e.cs.StorageV1().StorageClasses()
	resizable, fixed := e.name("resizable"), e.name("fixed")
	for name, allow := range map[string]*bool{resizable: ptr(true), fixed: nil} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "apitest.example.com",
			AllowVolumeExpansion: allow}
		if _, err := scs.Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = scs.Delete(e.ctx, name, metav1.DeleteOptions{}) })
	}
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(e.ns)
	resizeTo := func(name, size string) error {
		patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
		_, err := pvcs.Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}

	if _, err := pvcs.Create(e.ctx, claim(e.ns, "pending"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := resizeTo("pending", "2Gi")
	wantPrefix := `PersistentVolumeClaim "pending" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims` + "\n"
	if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), wantPrefix) {
		t.Errorf("growing an unbound claim: %v\nwant 422 Invalid starting %q", err, wantPrefix)
	}

	e.boundClaim(t, "fixed", fixed)
	err = resizeTo("fixed", "2Gi")
	want := `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("growing a claim whose class does not allow expansion: %v\nwant 403 %q", err, want)
	}

	e.boundClaim(t, "grow", resizable)
	if err := resizeTo("grow", "3Gi"); err != nil {
		t.Fatalf("growing a bound claim of a class that allows expansion: %v", err)
	}
	err = resizeTo("grow", "1Gi")
	want = `PersistentVolumeClaim "grow" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("lowering the request to status.capacity: %v\nwant 422 %q", err, want)
	}
	if err := resizeTo("grow", "2Gi"); err != nil {
		t.Errorf("lowering the request to above status.capacity (recovery) was refused: %v", err)
	}

	// A resizer's status write: the annotation written with it stays.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := pvcs.Get(e.ctx, "grow", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, "apitest.example.com/written-with-status", "yes")
		_, err = pvcs.UpdateStatus(e.ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing a resize status: %v", err)
	}
	got, err := pvcs.Get(e.ctx, "grow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInProgress {
		t.Errorf("allocatedResourceStatuses %v, want storage: ControllerResizeInProgress", got.Status.AllocatedResourceStatuses)
	}
	if got.Annotations["apitest.example.com/written-with-status"] != "yes" {
		t.Errorf("an annotation written with a claim's status was dropped: %v", got.Annotations)
	}
	got.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = "Bogus"
	_, err = pvcs.UpdateStatus(e.ctx, got, metav1.UpdateOptions{})
	want = `PersistentVolumeClaim "grow" is invalid: status.allocatedResourceStatuses: Unsupported value: "storage": supported values: "ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("an unknown resize status: %v\nwant 422 %q", err, want)
	}
}

// boundClaim makes a 1Gi claim of class bound to a static volume, with
// the writes the PV controller makes for a pre-bound pair; a real PV
// controller may make them first, which comes to the same.
func (e *env) boundClaim(t *testing.T, name, class string) {
	t.Helper()
	pvName := e.name("pv-" + name)
	pvs := e.cs.CoreV1().PersistentVolumes()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: e.ns, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "apitest.example.com", VolumeHandle: pvName}},
		}}
	if _, err := pvs.Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pvs.Delete(e.ctx, pvName, metav1.DeleteOptions{}) })
	c := claim(e.ns, name)
	c.Spec.StorageClassName = &class
	c.Spec.VolumeName = pvName
	created, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(e.ns)
	steps := []func() error{
		func() error {
			v, err := pvs.Get(e.ctx, pvName, metav1.GetOptions{})
			if err != nil || v.Spec.ClaimRef.UID == created.UID {
				return err
			}
			v.Spec.ClaimRef.UID = created.UID
			_, err = pvs.Update(e.ctx, v, metav1.UpdateOptions{})
			return err
		},
		func() error {
			v, err := pvs.Get(e.ctx, pvName, metav1.GetOptions{})
			if err != nil || v.Status.Phase == corev1.VolumeBound {
				return err
			}
			v.Status.Phase = corev1.VolumeBound
			_, err = pvs.UpdateStatus(e.ctx, v, metav1.UpdateOptions{})
			return err
		},
		func() error {
			c, err := pvcs.Get(e.ctx, name, metav1.GetOptions{})
			if err != nil || c.Annotations["pv.kubernetes.io/bind-completed"] == "yes" {
				return err
			}
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
			_, err = pvcs.Update(e.ctx, c, metav1.UpdateOptions{})
			return err
		},
		func() error {
			c, err := pvcs.Get(e.ctx, name, metav1.GetOptions{})
			if err != nil || c.Status.Phase == corev1.ClaimBound {
				return err
			}
			c.Status.Phase = corev1.ClaimBound
			c.Status.AccessModes = pv.Spec.AccessModes
			c.Status.Capacity = pv.Spec.Capacity
			_, err = pvcs.UpdateStatus(e.ctx, c, metav1.UpdateOptions{})
			return err
		},
	}
	for _, step := range steps {
		if err := retry.RetryOnConflict(retry.DefaultRetry, step); err != nil {
			t.Fatalf("binding claim %s: %v", name, err)
		}
	}
	e.eventually(t, "claim "+name+" bound with 1Gi", func() error {
		c, err := pvcs.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound || c.Status.Capacity.Storage().Cmp(resource.MustParse("1Gi")) != 0 {
			return fmt.Errorf("phase %s capacity %v", c.Status.Phase, c.Status.Capacity)
		}
		return nil
	})
}
