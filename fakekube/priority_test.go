package fakekube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPriorityAdmission: a pod's class gives it its priority and
// preemption policy; an unknown class refuses it as the real plugin does;
// the system classes exist from the start.
func TestPriorityAdmission(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	never := corev1.PreemptNever
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: "polite"}, Value: 500, PreemptionPolicy: &never},
	} {
		if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if pc, err := c.SchedulingV1().PriorityClasses().Get(ctx, "high", metav1.GetOptions{}); err != nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("high = %v, %v", pc, err)
	}
	if pc, err := c.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{}); err != nil || pc.Value != 2000001000 {
		t.Fatalf("system-node-critical = %v, %v", pc, err)
	}
	pod := func(name, class string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{PriorityClassName: class,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	for _, tc := range []struct {
		name, class  string
		wantPriority int32
		wantPolicy   corev1.PreemptionPolicy
		wantErr      string
	}{
		{"plain", "", 0, corev1.PreemptLowerPriority, ""},
		{"high", "high", 1000, corev1.PreemptLowerPriority, ""},
		{"polite", "polite", 500, corev1.PreemptNever, ""},
		{"unknown", "nope", 0, "", `pods "unknown" is forbidden: no PriorityClass with name nope was found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.CoreV1().Pods("default").Create(ctx, pod(tc.name, tc.class), metav1.CreateOptions{})
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want 403 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got.Spec.Priority != tc.wantPriority || *got.Spec.PreemptionPolicy != tc.wantPolicy {
				t.Fatalf("priority %d policy %s, want %d %s", *got.Spec.Priority, *got.Spec.PreemptionPolicy, tc.wantPriority, tc.wantPolicy)
			}
		})
	}
}
