package fakekube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestDefaultTolerationSeconds: the DefaultTolerationSeconds plugin gives
// a pod 300 s of the not-ready and unreachable taints, or what
// Options.DefaultTolerationSeconds says (kube-apiserver's
// --default-*-toleration-seconds).
func TestDefaultTolerationSeconds(t *testing.T) {
	for _, tc := range []struct {
		opt, want int64
	}{{0, 300}, {30, 30}} {
		srv := New(Options{DefaultTolerationSeconds: tc.opt})
		c, err := kubernetes.NewForConfig(srv.RESTConfig("test"))
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		got, err := c.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.Tolerations) != 2 {
			t.Fatalf("option %d: tolerations %+v, want the two of the plugin", tc.opt, got.Spec.Tolerations)
		}
		for _, tol := range got.Spec.Tolerations {
			if tol.TolerationSeconds == nil || *tol.TolerationSeconds != tc.want {
				t.Errorf("option %d: toleration of %s for %v s, want %d", tc.opt, tol.Key, tol.TolerationSeconds, tc.want)
			}
		}
	}
}
