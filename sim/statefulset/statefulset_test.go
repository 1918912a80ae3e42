package statefulset

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

func testSet(replicas int32, policy appsv1.PodManagementPolicyType, whenScaled, whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: "svc", PodManagementPolicy: policy,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenScaled: whenScaled, WhenDeleted: whenDeleted},
		},
	}
}

const (
	retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	del    = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
)

func TestNewPodIdentityAndStorage(t *testing.T) {
	set := testSet(3, appsv1.OrderedReadyPodManagement, retain, retain)
	pod := newPod(set, 2, "web-abc")
	if pod.Name != "web-2" || pod.Spec.Hostname != "web-2" || pod.Spec.Subdomain != "svc" {
		t.Errorf("name %q hostname %q subdomain %q", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	for k, v := range map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-2", appsv1.PodIndexLabel: "2",
		appsv1.StatefulSetRevisionLabel: "web-abc"} {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "set-uid" || ref.Kind != "StatefulSet" {
		t.Errorf("controller %+v", ref)
	}
	// The template's volume of the claim template's name is replaced.
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-2" || pod.Spec.Volumes[1].Name != "scratch" {
		t.Errorf("volumes %+v", pod.Spec.Volumes)
	}
	claims := claimsFor(set, pod)
	if len(claims) != 1 || claims[0].Name != "data-web-2" || claims[0].Labels["app"] != "web" || claims[0].Labels["tier"] != "db" {
		t.Errorf("claims %+v", claims)
	}
	if !identityMatches(set, pod) || !storageMatches(set, pod) {
		t.Error("a new pod does not match its set")
	}
}

func TestClaimOwners(t *testing.T) {
	tests := []struct {
		name                    string
		whenScaled, whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType
		ordinal                 int // of 2 replicas: 2 is scaled down
		want                    []string
	}{
		{"retain both", retain, retain, 0, nil},
		{"delete with the set", retain, del, 0, []string{"StatefulSet"}},
		{"delete on scale down, pod in range", del, retain, 1, nil},
		{"delete on scale down, pod scaled down", del, retain, 2, []string{"Pod"}},
		{"delete both, pod in range", del, del, 0, []string{"StatefulSet"}},
		{"delete both, pod scaled down", del, del, 2, []string{"Pod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := testSet(2, appsv1.OrderedReadyPodManagement, tt.whenScaled, tt.whenDeleted)
			pod := newPod(set, tt.ordinal, "r")
			pod.UID = "pod-uid"
			claim := claimsFor(set, pod)[0]
			// An unrelated owner stays.
			claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "cm"}}
			wantMatch := tt.want == nil
			if got := claimOwnersMatch(claim, set, pod); got != wantMatch {
				t.Errorf("match before %t, want %t", got, wantMatch)
			}
			setClaimOwners(claim, set, pod)
			var kinds []string
			for _, r := range claim.OwnerReferences[1:] {
				kinds = append(kinds, r.Kind)
				if r.Controller == nil || !*r.Controller {
					t.Errorf("reference %+v is not a controller reference", r)
				}
			}
			if !slices.Equal(kinds, tt.want) || claim.OwnerReferences[0].Kind != "ConfigMap" {
				t.Errorf("owners %+v, want ConfigMap then %v", claim.OwnerReferences, tt.want)
			}
			if !claimOwnersMatch(claim, set, pod) {
				t.Error("no match after setting the owners")
			}
		})
	}
}

func TestRevisionHash(t *testing.T) {
	set := testSet(1, appsv1.OrderedReadyPodManagement, retain, retain)
	a, err := newRevision(set, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newRevision(set, 1, 1)
	changed := set.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	c, _ := newRevision(changed, 2, 0)
	if a.Name == b.Name || a.Name == c.Name {
		t.Errorf("names %s %s %s: the collision count and the template must change the hash", a.Name, b.Name, c.Name)
	}
	if a.Labels[ControllerRevisionHashLabel] != a.Name[len("web-"):] || a.Labels["app"] != "web" {
		t.Errorf("labels %v", a.Labels)
	}
	if again, _ := newRevision(set, 1, 0); again.Name != a.Name || string(again.Data.Raw) != string(a.Data.Raw) {
		t.Error("the revision is not deterministic")
	}
}

// rig is a controller on a fake clientset whose informer caches the test
// fills itself.
type rig struct {
	c  *Controller
	cs *fake.Clientset
	f  informers.SharedInformerFactory
}

func newRig(t *testing.T, objs ...runtime.Object) *rig {
	cs := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(cs, 0)
	rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) {
			return record.NewFakeRecorder(100), func() {}
		}}
	r := &rig{c: New(cs, f, rt), cs: cs, f: f}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			err = f.Apps().V1().StatefulSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *rig) podNames(t *testing.T) []string {
	pods, err := r.cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func runningPod(set *appsv1.StatefulSet, ordinal int, ready bool) *corev1.Pod {
	p := newPod(set, ordinal, "r")
	p.UID = types.UID("uid-" + p.Name)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	return p
}

func TestSyncPods(t *testing.T) {
	ordered, parallel := appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement
	tests := []struct {
		name     string
		set      *appsv1.StatefulSet
		existing func(set *appsv1.StatefulSet) []runtime.Object
		want     []string // pods after one sync
	}{
		{"ordered makes the first pod only", testSet(3, ordered, retain, retain), nil, []string{"web-0"}},
		{"parallel makes them all", testSet(3, parallel, retain, retain), nil, []string{"web-0", "web-1", "web-2"}},
		{"ordered waits for a pod that is not ready", testSet(3, ordered, retain, retain),
			func(s *appsv1.StatefulSet) []runtime.Object { return []runtime.Object{runningPod(s, 0, false)} }, []string{"web-0"}},
		{"ordered goes on after a ready pod", testSet(3, ordered, retain, retain),
			func(s *appsv1.StatefulSet) []runtime.Object { return []runtime.Object{runningPod(s, 0, true)} }, []string{"web-0", "web-1"}},
		{"a missing ordinal is made again", testSet(2, ordered, retain, retain),
			func(s *appsv1.StatefulSet) []runtime.Object { return []runtime.Object{runningPod(s, 1, true)} }, []string{"web-0", "web-1"}},
		{"scale down deletes the highest ordinal first", testSet(1, ordered, retain, retain),
			func(s *appsv1.StatefulSet) []runtime.Object {
				return []runtime.Object{runningPod(s, 0, true), runningPod(s, 1, true), runningPod(s, 2, true)}
			}, []string{"web-0", "web-1"}},
		{"parallel scale down deletes all at once", testSet(1, parallel, retain, retain),
			func(s *appsv1.StatefulSet) []runtime.Object {
				return []runtime.Object{runningPod(s, 0, true), runningPod(s, 1, true), runningPod(s, 2, true)}
			}, []string{"web-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.set}
			if tt.existing != nil {
				objs = append(objs, tt.existing(tt.set)...)
			}
			r := newRig(t, objs...)
			if err := r.c.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			if got := r.podNames(t); !slices.Equal(got, tt.want) {
				t.Errorf("pods %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSyncMakesClaimsOnceAndFixesOwners(t *testing.T) {
	set := testSet(1, appsv1.OrderedReadyPodManagement, retain, del)
	r := newRig(t, set)
	ctx := context.Background()
	if err := r.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	claim, err := r.cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Made before the cache knew it: no owner yet.
	if len(claim.OwnerReferences) != 0 {
		t.Errorf("owners %+v at creation", claim.OwnerReferences)
	}
	// A later sync, the pod running and the claim cached, sets the set as
	// the claim's owner.
	pod := runningPod(set, 0, true)
	if err := r.f.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	if err := r.f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(claim); err != nil {
		t.Fatal(err)
	}
	if err := r.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	claim, _ = r.cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-web-0", metav1.GetOptions{})
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != "set-uid" {
		t.Errorf("owners %+v, want the set", claim.OwnerReferences)
	}
}

// TestRevisionNameAsUpstream: the revision a v1.34 controller made for
// this template (kubernetes pkg/controller/statefulset/testdata,
// compatibility_revision_1.34.0.json) is named test-776999688b.
func TestRevisionNameAsUpstream(t *testing.T) {
	grace := int64(30)
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: appsv1.StatefulSetSpec{
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"test": "value"}, Labels: map[string]string{"app": "foo"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "test", Image: "test", ImagePullPolicy: corev1.PullAlways,
					TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
				DNSPolicy: corev1.DNSClusterFirst, RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
				SecurityContext: &corev1.PodSecurityContext{}, TerminationGracePeriodSeconds: &grace,
			}}}}
	r, err := newRevision(set, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "test-776999688b" {
		t.Errorf("revision %s, want test-776999688b; data %s", r.Name, r.Data.Raw)
	}
}
