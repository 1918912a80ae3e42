package fakekube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStreamingSubresourcesRefusedByName: exec, attach and portforward of
// a pod that exists are refused as not supported; of one that does not,
// NotFound.
func TestStreamingSubresourcesRefusedByName(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"exec", "attach", "portforward"} {
		err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("app").SubResource(sub).Do(ctx).Error()
		if !apierrors.IsMethodNotSupported(err) || !strings.Contains(err.Error(), "pods/"+sub) ||
			!strings.Contains(err.Error(), "is not supported by csisim serve") {
			t.Errorf("%s of a pod that exists: %v, want 405 not supported by csisim serve", sub, err)
		}
		err = cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("gone").SubResource(sub).Do(ctx).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s of a pod that does not exist: %v, want NotFound", sub, err)
		}
	}
}
