package invariant

import (
	"regexp"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/trace"
)

// hist builds a synthetic history, entry by entry.
type hist struct {
	entries []trace.Entry
	end     EndState
}

func (h *hist) add(e trace.Entry) int {
	e.Seq = len(h.entries) + 1
	h.entries = append(h.entries, e)
	return e.Seq
}

// call adds a successful CSI call; the kubelet of node makes node service
// calls (node "" for controller calls).
func (h *hist) call(verb string, c trace.CSICall) int {
	return h.callCode(verb, codes.OK, c)
}

func (h *hist) callCode(verb string, code codes.Code, c trace.CSICall) int {
	c.Code = code
	c.StartedAfter = len(h.entries)
	actor := "external-attacher"
	if c.Node != "" {
		actor = "kubelet:" + c.Node
		if c.NodeID == "" {
			c.NodeID = c.Node
		}
	}
	e := trace.Entry{Kind: trace.CSI, Actor: actor, Verb: verb, Object: c.Volume, Detail: code.String(), Call: &c}
	return h.add(e)
}

func (h *hist) write(obj runtime.Object, removed bool) int {
	m, _ := obj.(metav1.Object)
	kind := map[string]string{"*v1.PersistentVolume": "PersistentVolume", "*v1.PersistentVolumeClaim": "PersistentVolumeClaim",
		"*v1.Pod": "Pod", "*v1.VolumeAttachment": "VolumeAttachment", "*v1.Node": "Node", "*v1.CSIDriver": "CSIDriver"}[typeName(obj)]
	return h.add(trace.Entry{Kind: trace.API, Actor: "test", Verb: "update", Object: kind + " " + m.GetName(),
		Write: &trace.APIWrite{Verb: "update", Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, Removed: removed}})
}

// refused adds a write the API server refused (a 409 or a 429), as the
// simulator records it: no object, and for a create no name.
func (h *hist) refused(verb, kind, name string) int {
	return h.add(trace.Entry{Kind: trace.API, Actor: "test", Verb: verb, Object: kind + " " + name, Err: "429 TooManyRequests",
		Write: &trace.APIWrite{Verb: verb, Kind: kind, Name: name}})
}

func (h *hist) data(d trace.DataCheck) int {
	return h.add(trace.Entry{Kind: trace.Data, Actor: "workload", Verb: "check data", Check: &d})
}

func (h *hist) check(t *testing.T, inv Invariant) []Violation {
	t.Helper()
	return run(inv, &History{Entries: h.entries, End: h.end})
}

func typeName(o runtime.Object) string {
	switch o.(type) {
	case *corev1.PersistentVolume:
		return "*v1.PersistentVolume"
	case *corev1.PersistentVolumeClaim:
		return "*v1.PersistentVolumeClaim"
	case *corev1.Pod:
		return "*v1.Pod"
	case *storagev1.VolumeAttachment:
		return "*v1.VolumeAttachment"
	case *corev1.Node:
		return "*v1.Node"
	case *storagev1.CSIDriver:
		return "*v1.CSIDriver"
	}
	return ""
}

func pv(name, handle string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		AccessModes:            []corev1.PersistentVolumeAccessMode{mode},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: handle}}}}
}

func pvc(name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
}

func pod(name, uid, node string, phase corev1.PodPhase, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Spec:   corev1.PodSpec{NodeName: node, Volumes: volumes, Containers: []corev1.Container{{Name: "app", VolumeMounts: mountsOf(volumes)}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func va(name, pvName, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "d", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}
}

func node(name string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

// target is a kubelet publish target for a pod's volume.
func target(node, uid, pvName string) string {
	return "/run/nodes/" + node + "/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/" + pvName + "/mount"
}

func staging(node, handle string) string {
	return "/run/nodes/" + node + "/kubelet/plugins/kubernetes.io/csi/d/" + handle + "/globalmount"
}

// expectViolations checks how many violations there are and which entries
// the first names.
func expectViolations(t *testing.T, got []Violation, n int, entries ...int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d violations, want %d: %+v", len(got), n, got)
	}
	if n > 0 && len(entries) > 0 && !slices.Equal(got[0].Entries, entries) {
		t.Errorf("violation names entries %v, want %v (%s)", got[0].Entries, entries, got[0].Message)
	}
}

func TestNamesAreStableKebabCase(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	seen := map[string]bool{}
	for _, inv := range All() {
		if !kebab.MatchString(inv.Name) || seen[inv.Name] || inv.Doc == "" {
			t.Errorf("invariant %q: want a unique kebab-case name and a doc", inv.Name)
		}
		seen[inv.Name] = true
	}
	if !Known("nothing-leaked") || Known("nothing-leaks") {
		t.Error("Known does not tell names from others")
	}
}

func TestCheckNamesTheInvariant(t *testing.T) {
	var h hist
	h.call("CreateVolume", trace.CSICall{Volume: "v1"})
	h.end.Observed = true
	got := Check(&History{Entries: h.entries, End: h.end})
	if len(got) != 1 || got[0].Invariant != "no-leaked-volume" {
		t.Fatalf("got %+v, want one no-leaked-volume violation", got)
	}
}

// mountsOf mounts every volume in the pod's one container.
func mountsOf(volumes []corev1.Volume) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, v := range volumes {
		out = append(out, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	return out
}
