package apitest

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podTemplate is a minimal pod template labelled app=name.
func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{SchedulerName: "apitest-none", Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

// workloadDefaults: the defaults the server gives the apps/v1 kinds
// (kubernetes pkg/apis/apps/v1/defaults.go) and their pod templates.
func workloadDefaults(t *testing.T, e *env) {
	apps := e.cs.AppsV1()
	selector := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	}
	d, err := apps.Deployments(e.ns).Create(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rolling"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: selector("rolling"), Template: podTemplate("rolling")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want25 := intstr.FromString("25%")
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil ||
		fmt.Sprint(d.Spec.Strategy.RollingUpdate.MaxSurge) != fmt.Sprint(&want25) ||
		fmt.Sprint(d.Spec.Strategy.RollingUpdate.MaxUnavailable) != fmt.Sprint(&want25) {
		t.Errorf("deployment strategy %+v, want RollingUpdate 25%%/25%%", d.Spec.Strategy)
	}
	if d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 10 ||
		d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment revisionHistoryLimit %v progressDeadlineSeconds %v, want 10 and 600",
			d.Spec.RevisionHistoryLimit, d.Spec.ProgressDeadlineSeconds)
	}
	ts := d.Spec.Template.Spec
	if ts.RestartPolicy != corev1.RestartPolicyAlways || ts.TerminationGracePeriodSeconds == nil || *ts.TerminationGracePeriodSeconds != 30 ||
		ts.DNSPolicy != corev1.DNSClusterFirst || ts.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("deployment template defaults: restartPolicy %q grace %v dnsPolicy %q pullPolicy %q", ts.RestartPolicy,
			ts.TerminationGracePeriodSeconds, ts.DNSPolicy, ts.Containers[0].ImagePullPolicy)
	}
	// Admission adds tolerations and a priority to pods, not to templates.
	if len(ts.Tolerations) != 0 || ts.Priority != nil || ts.EnableServiceLinks != nil {
		t.Errorf("deployment template tolerations %v priority %v enableServiceLinks %v, want none", ts.Tolerations, ts.Priority,
			ts.EnableServiceLinks)
	}
	if d.Generation != 1 {
		t.Errorf("deployment generation %d, want 1", d.Generation)
	}

	r, err := apps.Deployments(e.ns).Create(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "recreate"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: selector("recreate"), Template: podTemplate("recreate"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("a Recreate deployment got rollingUpdate %+v", r.Spec.Strategy.RollingUpdate)
	}

	rs, err := apps.ReplicaSets(e.ns).Create(e.ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(0)), Selector: selector("rs"), Template: podTemplate("rs")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("replicaset template restartPolicy %q, want Always", rs.Spec.Template.Spec.RestartPolicy)
	}

	sts, err := apps.StatefulSets(e.ns).Create(e.ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "sts"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: selector("sts"), Template: podTemplate("sts"),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := sts.Spec
	if s.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
		t.Errorf("statefulset podManagementPolicy %q, want OrderedReady", s.PodManagementPolicy)
	}
	if s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || s.UpdateStrategy.RollingUpdate == nil ||
		s.UpdateStrategy.RollingUpdate.Partition == nil || *s.UpdateStrategy.RollingUpdate.Partition != 0 ||
		s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil || s.UpdateStrategy.RollingUpdate.MaxUnavailable.String() != "1" {
		t.Errorf("statefulset updateStrategy %+v, want RollingUpdate with partition 0 and maxUnavailable 1", s.UpdateStrategy)
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("statefulset persistentVolumeClaimRetentionPolicy %+v, want Retain/Retain", p)
	}
	if s.RevisionHistoryLimit == nil || *s.RevisionHistoryLimit != 10 {
		t.Errorf("statefulset revisionHistoryLimit %v, want 10", s.RevisionHistoryLimit)
	}
	ct := s.VolumeClaimTemplates[0]
	if ct.Spec.VolumeMode == nil || *ct.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || ct.Status.Phase != corev1.ClaimPending {
		t.Errorf("statefulset claim template volumeMode %v phase %q, want Filesystem and Pending", ct.Spec.VolumeMode, ct.Status.Phase)
	}
}
