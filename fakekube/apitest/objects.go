package apitest

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
}

func claim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			// A class no provisioner serves, so no controller touches it.
			StorageClassName: ptr("apitest-none"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// unscheduledPod is a pod no scheduler picks up.
func unscheduledPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{SchedulerName: "apitest-none", Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

func attachment(name, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "apitest.example.com", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("apitest-pv")}}}
}

func resourceVersionAndConflicts(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	created, err := cms.Create(e.ctx, configMap(e.ns, "cm"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set uid/resourceVersion/creationTimestamp: %+v", created.ObjectMeta)
	}
	next := created.DeepCopy()
	next.Data["k"] = "changed"
	updated, err := cms.Update(e.ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == created.ResourceVersion {
		t.Errorf("resourceVersion unchanged by a write: %s", updated.ResourceVersion)
	}
	stale := created.DeepCopy()
	stale.Data["k"] = "stale"
	_, err = cms.Update(e.ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want 409 Conflict", err)
	}
	want := `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again`
	if err.Error() != want {
		t.Errorf("conflict message\n got %q\nwant %q", err.Error(), want)
	}
	if _, err := cms.Create(e.ctx, configMap(e.ns, "cm"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) ||
		err.Error() != `configmaps "cm" already exists` {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	if _, err := cms.Get(e.ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `configmaps "nope" not found` {
		t.Errorf("get missing: %v", err)
	}
	gen := configMap(e.ns, "")
	gen.GenerateName = "gen-"
	got, err := cms.Create(e.ctx, gen, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Name) != len("gen-")+5 || got.Name[:4] != "gen-" {
		t.Errorf("generated name %q, want gen- and five characters", got.Name)
	}
}

func noOpUpdateIsNotAWrite(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	created, err := cms.Create(e.ctx, configMap(e.ns, "cm"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	same, err := cms.Update(e.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != created.ResourceVersion {
		t.Errorf("an update that changes nothing moved resourceVersion %s -> %s", created.ResourceVersion, same.ResourceVersion)
	}
}

func claimAdmissionAndDefaults(t *testing.T, e *env) {
	got, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, claim(e.ns, "data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.ClaimPending {
		t.Errorf("phase %q, want Pending", got.Status.Phase)
	}
	if !slices.Equal(got.Finalizers, []string{"kubernetes.io/pvc-protection"}) {
		t.Errorf("finalizers %v, want [kubernetes.io/pvc-protection]", got.Finalizers)
	}
	if got.Spec.VolumeMode == nil || *got.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("volumeMode %v, want Filesystem by default", got.Spec.VolumeMode)
	}
	if got.Generation != 0 {
		t.Errorf("a claim has no generation on a real server; got %d", got.Generation)
	}
	pod, err := e.cs.CoreV1().Pods(e.ns).Create(e.ctx, unscheduledPod(e.ns, "p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.TerminationGracePeriodSeconds == nil ||
		*pod.Spec.TerminationGracePeriodSeconds != 30 || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pod defaults: restartPolicy %q grace %v pullPolicy %q", pod.Spec.RestartPolicy,
			pod.Spec.TerminationGracePeriodSeconds, pod.Spec.Containers[0].ImagePullPolicy)
	}
	tolerates := map[string]bool{}
	for _, tol := range pod.Spec.Tolerations {
		if tol.Effect == corev1.TaintEffectNoExecute && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 {
			tolerates[tol.Key] = true
		}
	}
	if !tolerates["node.kubernetes.io/not-ready"] || !tolerates["node.kubernetes.io/unreachable"] {
		t.Errorf("pod tolerations %v, want the 300 s not-ready and unreachable ones", pod.Spec.Tolerations)
	}
}

func finalizersHoldDeletion(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	cm := configMap(e.ns, "held")
	cm.Finalizers = []string{"example.com/hold"}
	if _, err := cms.Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(e.ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := cms.Get(e.ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an object with a finalizer vanished on delete: %v", err)
	}
	if held.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	held.Finalizers = append(held.Finalizers, "example.com/new")
	if _, err := cms.Update(e.ctx, held, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding a finalizer while deleting: %v, want 422 Invalid", err)
	}
	held.Finalizers = nil
	if _, err := cms.Update(e.ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "object goes with its last finalizer", func() error {
		_, err := cms.Get(e.ctx, "held", metav1.GetOptions{})
		return gone(err)
	})
}

func statusSubresource(t *testing.T, e *env) {
	vas := e.cs.StorageV1().VolumeAttachments()
	name := e.name("va")
	va, err := vas.Create(e.ctx, attachment(name, e.name("node")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vas.Delete(e.ctx, name, metav1.DeleteOptions{}) })
	va.Status.Attached = true
	va.Labels = map[string]string{"ignored": "yes"}
	got, err := vas.UpdateStatus(e.ctx, va, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Attached || got.Labels["ignored"] != "" {
		t.Errorf("status update: attached %t labels %v; want attached and no label", got.Status.Attached, got.Labels)
	}
	got.Status.Attached = false
	got.Labels = map[string]string{"kept": "yes"}
	got2, err := vas.Update(e.ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got2.Status.Attached || got2.Labels["kept"] != "yes" {
		t.Errorf("main update: attached %t labels %v; want status unchanged and the label", got2.Status.Attached, got2.Labels)
	}
}

func podBindingAndGracefulDeletion(t *testing.T, e *env) {
	pods := e.cs.CoreV1().Pods(e.ns)
	pod, err := pods.Create(e.ctx, unscheduledPod(e.ns, "app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := e.name("node")
	bind := func(to string) error {
		return pods.Bind(e.ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: pod.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: to}}, metav1.CreateOptions{})
	}
	if err := bind(node); err != nil {
		t.Fatal(err)
	}
	if err := bind(node + "-other"); !apierrors.IsConflict(err) {
		t.Errorf("second binding: %v, want Conflict", err)
	}
	bound, err := pods.Get(e.ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != node {
		t.Fatalf("nodeName = %q, want %q", bound.Spec.NodeName, node)
	}
	scheduled := false
	for _, c := range bound.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue)
	}
	if !scheduled {
		t.Errorf("no PodScheduled=True condition after binding: %v", bound.Status.Conditions)
	}
	if err := pods.Delete(e.ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminating, err := pods.Get(e.ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a pod bound to a node must wait for its kubelet: %v", err)
	}
	if g := terminating.DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("deletionGracePeriodSeconds = %v, want 30", g)
	}
	if err := pods.Delete(e.ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)),
		Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "pod goes on a delete with grace 0", func() error {
		_, err := pods.Get(e.ctx, "app", metav1.GetOptions{})
		return gone(err)
	})
	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
	if _, err := pods.Create(e.ctx, unscheduledPod(e.ns, "other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(e.ctx, "other", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong UID precondition: %v, want Conflict", err)
	}
}

func patchTypes(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	if _, err := cms.Create(e.ctx, configMap(e.ns, "cm"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pt    types.PatchType
		patch string
		label string
	}{
		{types.MergePatchType, `{"metadata":{"labels":{"x":"merge"}}}`, "merge"},
		{types.StrategicMergePatchType, `{"metadata":{"labels":{"x":"smp"}}}`, "smp"},
		{types.JSONPatchType, `[{"op":"replace","path":"/metadata/labels/x","value":"json"}]`, "json"},
	} {
		got, err := cms.Patch(e.ctx, "cm", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.pt, err)
		}
		if got.Labels["x"] != tc.label {
			t.Errorf("%s: label x = %q, want %q", tc.pt, got.Labels["x"], tc.label)
		}
	}
	if _, err := cms.Patch(e.ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patching a missing object: %v, want NotFound", err)
	}
}

func immutableFields(t *testing.T, e *env) {
	pvcs := e.cs.CoreV1().PersistentVolumeClaims(e.ns)
	if _, err := pvcs.Create(e.ctx, claim(e.ns, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := pvcs.Patch(e.ctx, "data", types.MergePatchType, []byte(`{"spec":{"accessModes":["ReadWriteMany"]}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing a claim's access modes: %v, want Invalid", err)
	}
	scs := e.cs.StorageV1().StorageClasses()
	name := e.name("sc")
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "apitest.example.com",
		Parameters: map[string]string{"a": "1"}}
	if _, err := scs.Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = scs.Delete(e.ctx, name, metav1.DeleteOptions{}) })
	_, err = scs.Patch(e.ctx, name, types.MergePatchType, []byte(`{"parameters":{"a":"2"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing a StorageClass's parameters: %v, want Invalid", err)
	}
	vas := e.cs.StorageV1().VolumeAttachments()
	vaName := e.name("va")
	if _, err := vas.Create(e.ctx, attachment(vaName, e.name("node")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vas.Delete(e.ctx, vaName, metav1.DeleteOptions{}) })
	_, err = vas.Patch(e.ctx, vaName, types.MergePatchType, []byte(`{"spec":{"nodeName":"elsewhere"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing a VolumeAttachment's spec: %v, want Invalid", err)
	}
}

// causeFields lists the fields an Invalid error names.
func causeFields(err error) []string {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range st.Status().Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

func validationErrors(t *testing.T, e *env) {
	missing := "apitest-missing-" + e.suffix
	if _, err := e.cs.CoreV1().ConfigMaps(missing).Create(e.ctx, configMap(missing, "cm"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v, want NotFound", err)
	}
	_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(e.ctx, configMap(e.ns, "Bad_Name"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !slices.Contains(causeFields(err), "metadata.name") {
		t.Errorf("invalid name: %v, want Invalid on metadata.name", err)
	}
	noModes := claim(e.ns, "nomodes")
	noModes.Spec.AccessModes = nil
	_, err = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, noModes, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !slices.Contains(causeFields(err), "spec.accessModes") {
		t.Errorf("claim without access modes: %v (fields %v), want Invalid on spec.accessModes", err, causeFields(err))
	}
	noSize := claim(e.ns, "nosize")
	noSize.Spec.Resources.Requests = nil
	_, err = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, noSize, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !slices.Contains(causeFields(err), "spec.resources[storage]") {
		t.Errorf("claim without a size: %v (fields %v), want Invalid on spec.resources[storage]", err, causeFields(err))
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: e.name("noprov")}}
	_, err = e.cs.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !slices.Contains(causeFields(err), "provisioner") {
		t.Errorf("StorageClass without a provisioner: %v (fields %v), want Invalid on provisioner", err, causeFields(err))
	}
}
