package fakekube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// kcmAgent is a user agent as kube-controller-manager's clients send it:
// the binary, then what client-go's AddUserAgent appended.
const kcmAgent = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef0/persistent-volume-binder"

// entries summarises managedFields as "manager Operation[/subresource] apiVersion @time".
func entries(m metav1.Object) []string {
	var out []string
	for _, e := range m.GetManagedFields() {
		s := e.Manager + " " + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		s += " " + e.APIVersion + " " + string(e.FieldsType)
		if e.Time != nil {
			s += " @" + e.Time.UTC().Format(time.RFC3339)
		}
		out = append(out, s)
	}
	return out
}

func TestManagedFieldsOfWrites(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	srv := New(Options{Seed: 1, Clock: clk})
	user := client(t, srv, "scenario")
	kcm := client(t, srv, kcmAgent).CoreV1().PersistentVolumeClaims("default")

	pvc, err := user.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scenario Update v1 FieldsV1 @2030-01-02T03:04:05Z"}
	if got := entries(pvc); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after create: %q, want %q", got, want)
	}
	if fields := pvc.ManagedFields[0].FieldsV1.GetRawString(); !strings.Contains(fields, `"f:spec":{"f:accessModes":{}`) {
		t.Errorf("the creator's fields: %s, want spec.accessModes among them", fields)
	}

	// A status write by kube-controller-manager, later, with its fieldManager
	// taken from its user agent.
	clk.Step(90 * time.Second)
	pvc.Status.Phase = corev1.ClaimBound
	pvc, err = kcm.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "kube-controller-manager Update/status v1 FieldsV1 @2030-01-02T03:05:35Z")
	if got := entries(pvc); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after a status update: %q, want %q", got, want)
	}

	// An update that changes nothing is no write: same resourceVersion,
	// same entries and times.
	clk.Step(time.Minute)
	same, err := kcm.Update(ctx, pvc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != pvc.ResourceVersion || strings.Join(entries(same), "|") != strings.Join(want, "|") {
		t.Fatalf("a no-op update: rv %s -> %s, entries %q, want them unchanged", pvc.ResourceVersion, same.ResourceVersion, entries(same))
	}

	// The fieldManager parameter names the manager; an annotation set by it
	// is its own.
	pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	pvc, err = kcm.Update(ctx, pvc, metav1.UpdateOptions{FieldManager: "binder"})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "binder Update v1 FieldsV1 @2030-01-02T03:06:35Z")
	if got := entries(pvc); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after an update with fieldManager: %q, want %q", got, want)
	}

	// A merge patch from a user agent of the kubelet's form.
	kubelet := client(t, srv, "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0")
	clk.Step(time.Second)
	pvc, err = kubelet.CoreV1().PersistentVolumeClaims("default").Patch(ctx, "data", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(pvc); len(got) != 4 || got[3] != "kubelet Update v1 FieldsV1 @2030-01-02T03:06:36Z" {
		t.Fatalf("after a patch: %q, want a kubelet Update entry last", got)
	}
}

func TestWriteParamsRefused(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	_, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{FieldManager: strings.Repeat("x", 129)})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "CreateOptions.meta.k8s.io") ||
		!strings.Contains(err.Error(), "fieldManager: Too long: may not be more than 128 bytes") {
		t.Fatalf("create with a fieldManager of 129 bytes: %v, want 422 on CreateOptions", err)
	}
	if _, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	force := true
	_, err = pvcs.Patch(ctx, "data", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{Force: &force})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "force: Forbidden: may not be specified for non-apply patch") {
		t.Fatalf("a merge patch with force: %v, want 422", err)
	}
	_, err = pvcs.Patch(ctx, "data", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"}}`),
		metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fieldManager: Required value: is required for apply patch") {
		t.Fatalf("an apply without fieldManager: %v, want 422", err)
	}
}

const appliedConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: %s
`

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	srv := New(Options{Seed: 1, Clock: clk})
	cms := client(t, srv, "scenario").CoreV1().ConfigMaps("default")
	apply := func(manager, mode string, force bool) (*corev1.ConfigMap, error) {
		return cms.Patch(ctx, "settings", types.ApplyYAMLPatchType, []byte(strings.ReplaceAll(appliedConfigMap, "%s", mode)),
			metav1.PatchOptions{FieldManager: manager, Force: &force})
	}
	// An apply creates what is not there.
	cm, err := apply("alice", "fast", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(cm); len(got) != 1 || got[0] != "alice Apply v1 FieldsV1 @2030-01-02T03:04:05Z" || cm.Data["mode"] != "fast" {
		t.Fatalf("apply of a new object: %q %v", got, cm.Data)
	}
	// Another manager changing alice's field: a conflict, as the real
	// server words it, with a cause naming the field.
	_, err = apply("bob", "slow", false)
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !asStatus(err, &status) {
		t.Fatalf("apply of another manager's field: %v, want 409 Conflict", err)
	}
	st := status.Status()
	if st.Message != `Apply failed with 1 conflict: conflict with "alice": .data.mode` || st.Details == nil ||
		len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != ".data.mode" ||
		st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict {
		t.Fatalf("the conflict: %q %+v", st.Message, st.Details)
	}
	// Applying the same value is no conflict: bob shares the field. The
	// object does not change, and the field manager gives bob's entry no
	// time then (managedfieldsupdater.go): it sorts first.
	clk.Step(time.Minute)
	if cm, err = apply("bob", "fast", false); err != nil {
		t.Fatalf("apply of the same value: %v", err)
	}
	if got := entries(cm); len(got) != 2 || got[0] != "bob Apply v1 FieldsV1" || !strings.HasPrefix(got[1], "alice Apply") {
		t.Fatalf("after a shared apply: %q", got)
	}
	// Forced, bob takes the field: alice no longer holds anything.
	if cm, err = apply("bob", "slow", true); err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if got := entries(cm); len(got) != 1 || !strings.HasPrefix(got[0], "bob Apply") || cm.Data["mode"] != "slow" {
		t.Fatalf("after a forced apply: %q %v", got, cm.Data)
	}
	// An update of bob's field by a plain update takes it from him, as
	// on the real server (updates never conflict).
	cm.Data["mode"] = "medium"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "carol"}); err != nil {
		t.Fatal(err)
	}
	if got := entries(cm); len(got) != 1 || !strings.HasPrefix(got[0], "carol Update") {
		t.Fatalf("after carol's update: %q", got)
	}
	// An apply that names another object in its body than on the URL.
	_, err = cms.Patch(ctx, "other", types.ApplyYAMLPatchType, []byte(strings.ReplaceAll(appliedConfigMap, "%s", "x")),
		metav1.PatchOptions{FieldManager: "alice"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "the name of the object (settings) does not match the name on the URL (other)") {
		t.Fatalf("apply to another name: %v", err)
	}
	// A field the schema does not know is refused.
	_, err = cms.Patch(ctx, "settings", types.ApplyYAMLPatchType, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\nnonsense: 1\n"),
		metav1.PatchOptions{FieldManager: "alice"})
	if err == nil || !strings.Contains(err.Error(), "field not declared in schema") {
		t.Fatalf("apply of an unknown field: %v", err)
	}
}

// The same writes on the same clock give the same managedFields, byte for
// byte, whatever the wall clock says.
func TestManagedFieldsDeterministic(t *testing.T) {
	run := func() string {
		clk := clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
		srv := New(Options{Seed: 1, Clock: clk})
		pvcs := client(t, srv, kcmAgent).CoreV1().PersistentVolumeClaims("default")
		pvc, err := pvcs.Create(context.Background(), testPVC("data"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the wall clock moves on; the virtual one does not
		pvc.Status.Phase = corev1.ClaimBound
		if pvc, err = pvcs.UpdateStatus(context.Background(), pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return strings.Join(entries(pvc), "|")
	}
	if a, b := run(), run(); a != b || strings.Contains(a, time.Now().UTC().Format("2006-01-02")) {
		t.Fatalf("two runs: %q and %q, want the same, on the virtual clock", a, b)
	}
}

// A simulated component's user agent names its binary to the field
// manager and itself to the timeline, as a real one's does.
func TestUserAgentManagerAndActor(t *testing.T) {
	for _, tt := range []struct {
		userAgent, fieldManager, manager, actor string
	}{
		{UserAgent("kube-controller-manager", "persistentvolume-binder"), "", "kube-controller-manager", "persistentvolume-binder"},
		{UserAgent("kubelet", "kubelet:node-1"), "", "kubelet", "kubelet:node-1"},
		{UserAgent("csi-provisioner", "external-provisioner"), "", "csi-provisioner", "external-provisioner"},
		{"kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:attachdetach-controller", "",
			"kube-controller-manager", "attachdetach-controller"},
		{"kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl-client-side-apply", "kubectl-client-side-apply", "kubectl"},
		{"scenario", "", "scenario", "scenario"},
		{"bad\x01name/1", "", "badname", "bad\x01name"},
		{strings.Repeat("y", 130), "", strings.Repeat("y", 128), strings.Repeat("y", 130)},
	} {
		if got := managerOf(tt.fieldManager, tt.userAgent); got != tt.manager {
			t.Errorf("managerOf(%q, %q) = %q, want %q", tt.fieldManager, tt.userAgent, got, tt.manager)
		}
		if got := actorOf(tt.userAgent); got != tt.actor {
			t.Errorf("actorOf(%q) = %q, want %q", tt.userAgent, got, tt.actor)
		}
	}
}
