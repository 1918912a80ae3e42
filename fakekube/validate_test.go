package fakekube

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"
)

// TestRefusedAsTheRealServerRefuses: writes kube-apiserver refuses are
// refused with its status, causes and message (the words are those a real
// v1.37.2 server answered; fidelity/validation_test.go compares many more).
func TestRefusedAsTheRealServerRefuses(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	tests := []struct {
		name    string
		create  func() error
		message string
		causes  []metav1.StatusCause
	}{
		{
			name: "ReadWriteOncePod with another access mode",
			create: func() error {
				pvc := testPVC("data")
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce}
				_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
				return err
			},
			message: `PersistentVolumeClaim "data" is invalid: spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes`,
			causes: []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Field: "spec.accessModes",
				Message: "Forbidden: may not use ReadWriteOncePod with other access modes"}},
		},
		{
			name: "a volumeMount naming no volume of the pod",
			create: func() error {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
				_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
				return err
			},
			message: `Pod "app" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "data"`,
			causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueNotFound, Field: "spec.containers[0].volumeMounts[0].name",
				Message: `Not found: "data"`}},
		},
		{
			name: "an invalid label key",
			create: func() error {
				sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Labels: map[string]string{"-tier": "gold"}},
					Provisioner: "hostpath.csisim.io"}
				_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
				return err
			},
			message: `StorageClass.storage.k8s.io "fast" is invalid: metadata.labels: Invalid value: "-tier": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character ` +
				`(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.create()
			var status apierrors.APIStatus
			if !apierrors.IsInvalid(err) || !asStatus(err, &status) {
				t.Fatalf("got %v, want 422 Invalid", err)
			}
			st := status.Status()
			if st.Code != http.StatusUnprocessableEntity || st.Message != tt.message {
				t.Errorf("got %d %q,\nwant 422 %q", st.Code, st.Message, tt.message)
			}
			if tt.causes != nil && (st.Details == nil || !slices.Equal(st.Details.Causes, tt.causes)) {
				t.Errorf("causes %+v, want %+v", st.Details, tt.causes)
			}
		})
	}
}

func asStatus(err error, into *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*into = s
	return ok
}

// TestImmutableAndStatusRules: the strategies' update rules apply — a
// bound claim's spec is immutable but for its request, a StorageClass's
// parameters are, and a status write is checked as one.
func TestImmutableAndStatusRules(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	pvc, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	_, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
	wantCause(t, err, "spec", metav1.CauseTypeForbidden)

	pvc, _ = pvcs.Get(ctx, "data", metav1.GetOptions{})
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("-1Gi")}
	_, err = pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	wantCause(t, err, "status.capacity[storage]", metav1.CauseTypeFieldValueInvalid)

	scs := cs.StorageV1().StorageClasses()
	sc, err := scs.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"},
		Provisioner: "hostpath.csisim.io", Parameters: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Parameters["a"] = "2"
	_, err = scs.Update(ctx, sc, metav1.UpdateOptions{})
	wantCause(t, err, "parameters", metav1.CauseTypeFieldValueInvalid)
}

// wantCause checks err is 422 Invalid with a cause at field of the type.
func wantCause(t *testing.T, err error, field string, typ metav1.CauseType) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !asStatus(err, &status) || status.Status().Details == nil {
		t.Fatalf("got %v, want 422 Invalid at %s", err, field)
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field && c.Type == typ {
			return
		}
	}
	t.Errorf("causes %+v, want %s at %s", status.Status().Details.Causes, typ, field)
}

// TestEveryKindHasTheRealStrategy: each kind served is validated by a
// strategy of kube-apiserver's (built-in) or built from its CRD.
func TestEveryKindHasTheRealStrategy(t *testing.T) {
	for _, res := range defaultResources() {
		st, err := strategyFor(res)
		if err != nil {
			t.Errorf("%s: %v", res.gvr, err)
			continue
		}
		if res.hasStatus && st.status == nil {
			t.Errorf("%s has a status subresource but no status strategy", res.gvr)
		}
		probe, _ := scheme.New(res.gvk())
		in, err := asServerHolds(res, st, probe, true)
		if err != nil {
			t.Errorf("%s: %v", res.gvr, err)
			continue
		}
		if kinds, _, err := st.main.ObjectKinds(in); err != nil || kinds[0].Kind != res.kind {
			t.Errorf("%s: the strategy sees %v (%v), want a %s", res.gvr, kinds, err, res.kind)
		}
	}
}

// TestWarnings: a strategy's warnings reach the client, as Warning headers.
func TestWarnings(t *testing.T) {
	srv := New(Options{Seed: 1})
	var got []string
	cfg := srv.RESTConfig("test")
	cfg.WarningHandler = warningFunc(func(code int, agent, text string) { got = append(got, text) })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pvc := testPVC("data")
	pvc.Annotations = map[string]string{annBetaStorageClass: "fast"}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kubernetes pkg/api/persistentvolumeclaim/util.go, GetWarningsForPersistentVolumeClaim.
	want := `metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead`
	if !slices.Contains(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

type warningFunc func(code int, agent, text string)

func (f warningFunc) HandleWarningHeader(code int, agent, text string) { f(code, agent, text) }

// TestStrategyTimesAreTheServerClock: what a strategy stamps with the
// time (a PersistentVolume's lastPhaseTransitionTime, a gated pod's
// condition) is the server's clock, not the machine's.
func TestStrategyTimesAreTheServerClock(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	srv := New(Options{Seed: 1, Clock: clk})
	cs, err := kubernetes.NewForConfig(srv.RESTConfig("test"))
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csisim.io", VolumeHandle: "h"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pv.Status.LastPhaseTransitionTime; got == nil || !got.Time.Equal(clk.Now()) {
		t.Errorf("created: lastPhaseTransitionTime %v, want %v", got, clk.Now())
	}
	clk.Step(time.Minute)
	pv.Status.Phase = corev1.VolumeAvailable
	if pv, err = cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pv.Status.LastPhaseTransitionTime; got == nil || !got.Time.Equal(clk.Now()) {
		t.Errorf("Available: lastPhaseTransitionTime %v, want %v", got, clk.Now())
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: "default"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}}}
	if pod, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(pod.Status.Conditions) != 1 || !pod.Status.Conditions[0].LastTransitionTime.Time.Equal(clk.Now()) {
		t.Errorf("gated pod's conditions %+v, want one at %v", pod.Status.Conditions, clk.Now())
	}
}
