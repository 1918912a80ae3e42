package apifaults

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/csisim/csisim/sim/attachdetach"
)

func TestStaleVolumeAttachment(t *testing.T) {
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pending := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d.example", VolumeHandle: "vol-1"}}}}
	tests := []struct {
		name, claim, wantErr string
	}{
		{name: "bound claim", claim: "data"},
		{name: "unbound claim", claim: "pending", wantErr: "not bound to a volume yet"},
		{name: "no such claim", claim: "nope", wantErr: `claim default/nope: persistentvolumeclaims "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset([]runtime.Object{bound, pending, pv}...)
			var name string
			err := StaleVolumeAttachment(context.Background(), cs, "", tt.claim, "node-a", func(n string) { name = n })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := attachdetach.AttachmentName("vol-1", "d.example", "node-a"); name != want {
				t.Errorf("name %s, want %s", name, want)
			}
			va, err := cs.StorageV1().VolumeAttachments().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if va.Spec.Attacher != "d.example" || va.Spec.NodeName != "node-a" || *va.Spec.Source.PersistentVolumeName != "pv-1" {
				t.Errorf("spec %+v", va.Spec)
			}
		})
	}
}
