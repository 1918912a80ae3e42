package fidelity

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/deployment"
	"github.com/csisim/csisim/sim/statefulset"
)

// TestWorkloadNamesOnTheRealControlPlane: the real kube-controller-manager
// names a Deployment's ReplicaSet <deployment>-<pod-template-hash> and a
// StatefulSet's ControllerRevision <set>-<hash> as the simulated
// controllers compute them, and fakekube defaults the templates as the
// real API server does, so that both clusters give the same names.
func TestWorkloadNamesOnTheRealControlPlane(t *testing.T) {
	c := startControlPlane(t, "fidelity-workloads")
	real, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	fake, err := kubernetes.NewForConfig(fakekube.New(fakekube.Options{}).RESTConfig("fidelity"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}

	realD, err := real.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fakeD, err := fake.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(realD.Spec, fakeD.Spec) {
		t.Errorf("deployment spec\nreal %+v\nfake %+v", realD.Spec, fakeD.Spec)
	}
	realS, err := real.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fakeS, err := fake.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(realS.Spec, fakeS.Spec) {
		t.Errorf("statefulset spec\nreal %+v\nfake %+v", realS.Spec, fakeS.Spec)
	}

	wantRS := "web-" + deployment.PodTemplateHash(&realD.Spec.Template, nil)
	wantRev, err := statefulset.RevisionName(realS, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		rss, err := real.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(rss.Items) == 0 {
			return false, err
		}
		revs, err := real.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(revs.Items) == 0 {
			return false, err
		}
		if got := rss.Items[0].Name; got != wantRS {
			t.Errorf("the real controller named the ReplicaSet %s, the simulated one computes %s", got, wantRS)
		}
		if got := revs.Items[0].Name; got != wantRev {
			t.Errorf("the real controller named the revision %s, the simulated one computes %s", got, wantRev)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the real controllers: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
