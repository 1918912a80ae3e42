package realcluster

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/trace"
)

func TestActorName(t *testing.T) {
	tests := []struct{ user, agent, want string }{
		{"system:serviceaccount:kube-system:persistent-volume-binder", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/persistent-volume-binder", "persistent-volume-binder"},
		{"system:serviceaccount:kube-system:attachdetach-controller", "kube-controller-manager/v1.37.2", "attachdetach-controller"},
		{"system:kube-scheduler", "kube-scheduler/v1.37.2 (linux/amd64) kubernetes/abc/scheduler", "kube-scheduler"},
		{"system:apiserver", "kube-apiserver/v1.37.2", "kube-apiserver"},
		{"kubernetes-admin", "csi-provisioner/v0.0.0 (linux/amd64) kubernetes/$Format", "csi-provisioner"},
		{"kubernetes-admin", "kubelet:node-1", "kubelet:node-1"},
		{"kubernetes-admin", "kubelet/v1.37.2 (linux/amd64) kubernetes/unknown/kubelet:node-2", "kubelet:node-2"},
		{"kubernetes-admin", "scenario", "scenario"},
		{"kubernetes-admin", "", "kubernetes-admin"},
	}
	for _, tc := range tests {
		if got := actorName(tc.user, tc.agent); got != tc.want {
			t.Errorf("actorName(%q, %q) = %q, want %q", tc.user, tc.agent, got, tc.want)
		}
	}
}

// auditJSON is an audit event as the API server sends it.
func auditJSON(verb, user, agent, resource, namespace, name, subresource string, code int, response string) string {
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete",
		"verb": verb, "user": map[string]any{"username": user}, "userAgent": agent,
		"objectRef":      map[string]any{"resource": resource, "namespace": namespace, "name": name, "subresource": subresource},
		"responseStatus": map[string]any{"code": code},
	}
	if response != "" {
		ev["responseObject"] = json.RawMessage(response)
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

func TestAuditSinkIndexesWrites(t *testing.T) {
	index := newAuditIndex()
	sink, err := startAuditSink(index)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	events := []string{
		// generateName: the name comes from the stored object.
		auditJSON("create", "kubernetes-admin", "csi-provisioner/v5", "events", "default", "",
			"", 201, `{"kind":"Event","metadata":{"name":"data.1","namespace":"default","resourceVersion":"7"}}`),
		auditJSON("create", "system:kube-scheduler", "kube-scheduler/v1", "pods", "default", "app", "binding", 201,
			`{"kind":"Status","status":"Success"}`),
		auditJSON("update", "system:serviceaccount:kube-system:pvc-protection-controller", "kcm", "persistentvolumeclaims", "default", "data", "", 200,
			`{"kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"default","resourceVersion":"9","deletionTimestamp":"2026-01-01T00:00:00Z"}}`),
		// Not a write the timeline wants: failed, and an earlier stage.
		auditJSON("update", "kubernetes-admin", "x", "pods", "default", "app", "", 409, ""),
		// The namespace controller empties a namespace: one request,
		// one DELETED event per object.
		auditJSON("deletecollection", "system:serviceaccount:kube-system:namespace-controller", "kcm", "events", "run-x", "", "", 200,
			`{"kind":"EventList","items":[]}`),
	}
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + strings.Join(events, ",") + `]}`
	resp, err := http.Post(sink.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sink answered %s", resp.Status)
	}

	match := func(o *observed) *auditRecord {
		r, _ := index.match(o)
		return r
	}
	if r := match(&observed{typ: observedAdded, resource: "events", namespace: "default", name: "data.1", rv: "7", order: 7}); r == nil || r.actor != "csi-provisioner" || r.verb != "create" {
		t.Errorf("event create: %+v", r)
	}
	if r := match(&observed{typ: observedUpdated, resource: "pods", namespace: "default", name: "app", rv: "8", order: 8, bound: true}); r == nil || r.actor != "kube-scheduler" || r.subresource != "binding" {
		t.Errorf("binding: %+v", r)
	}
	// The update that removed the last finalizer ends in a DELETED event.
	if r := match(&observed{typ: observedDeleted, resource: "persistentvolumeclaims", namespace: "default", name: "data", rv: "10", order: 10}); r == nil || r.actor != "pvc-protection-controller" || !r.removes {
		t.Errorf("removal: %+v", r)
	}
	if r := match(&observed{typ: observedUpdated, resource: "pods", namespace: "default", name: "app", rv: "11", order: 11}); r != nil {
		t.Errorf("a failed write matched: %+v", r)
	}
	for _, name := range []string{"app.1", "data.2"} {
		if r := match(&observed{typ: observedDeleted, resource: "events", namespace: "run-x", name: name, rv: "12", order: 12}); r == nil || r.actor != "namespace-controller" {
			t.Errorf("event %s deleted with its namespace's collection: %+v", name, r)
		}
	}
	if r := match(&observed{typ: observedDeleted, resource: "events", namespace: "default", name: "data.1", rv: "13", order: 13}); r != nil {
		t.Errorf("a deletecollection in run-x matched a delete in default: %+v", r)
	}
}

func TestAuditIndexMatching(t *testing.T) {
	now := time.Now()
	index := newAuditIndex()
	// A pod deleted without grace: the request stores rv 20 (grace 0),
	// then removes it at 21; its audit event carries 21.
	index.add(auditRecord{resource: "pods", namespace: "default", name: "app", rv: "21", verb: "delete", actor: "kubelet:node-1", removes: true, arrived: now})
	intermediate := &observed{typ: observedUpdated, resource: "pods", namespace: "default", name: "app", rv: "20", order: 20}
	if r, _ := index.match(intermediate); r == nil || r.actor != "kubelet:node-1" || r.used {
		t.Fatalf("the intermediate state: %+v (it must not claim the record)", r)
	}
	gone := &observed{typ: observedDeleted, resource: "pods", namespace: "default", name: "app", rv: "21", order: 21}
	if r, _ := index.match(gone); r == nil || r.actor != "kubelet:node-1" || !r.used {
		t.Fatalf("the removal: %+v", r)
	}
	if r, _ := index.match(gone); r != nil {
		t.Errorf("a record was claimed twice: %+v", r)
	}

	// Nothing yet: wait gives up at the deadline, or finds a record that
	// arrives meanwhile.
	later := &observed{typ: observedUpdated, resource: "pods", namespace: "default", name: "web", rv: "30", order: 30}
	if r := index.wait(context.Background(), later, time.Now().Add(20*time.Millisecond)); r != nil {
		t.Errorf("wait found %+v", r)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		index.add(auditRecord{resource: "pods", namespace: "default", name: "web", rv: "30", verb: "update", subresource: "status", actor: "kubelet:node-1", arrived: time.Now()})
	}()
	if r := index.wait(context.Background(), later, time.Now().Add(5*time.Second)); r == nil || r.subresource != "status" {
		t.Errorf("wait: %+v", r)
	}
}

func node(rv string, mutate func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: rv, Labels: map[string]string{"a": "b"}}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func TestNodeHeartbeatsAreLeftOut(t *testing.T) {
	k := watchedKind{kind: "Node", resource: "nodes"}
	unique := corev1.UniqueVolumeName("kubernetes.io/csi/d^vol-1")
	tests := []struct {
		name     string
		old, new *corev1.Node
		skip     bool
	}{
		{"a resync", node("1", nil), node("1", nil), true},
		{"a heartbeat", node("1", nil), node("2", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Now()}}
		}), true},
		{"volumes in use", node("1", nil), node("2", func(n *corev1.Node) { n.Status.VolumesInUse = []corev1.UniqueVolumeName{unique} }), false},
		{"volumes attached", node("1", nil), node("2", func(n *corev1.Node) {
			n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: unique}}
		}), false},
		{"an annotation", node("1", nil), node("2", func(n *corev1.Node) { n.Annotations = map[string]string{"ttl": "0"} }), false},
		{"a taint", node("1", nil), node("2", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}} }), false},
	}
	for _, tc := range tests {
		o := newObserved(observedUpdated, k, tc.old, tc.new)
		if got := unremarkable(o); got != tc.skip {
			t.Errorf("%s: left out %t, want %t", tc.name, got, tc.skip)
		}
	}
}

func TestAttributionWithoutAudit(t *testing.T) {
	k := watchedKind{kind: "Pod", resource: "pods"}
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", ResourceVersion: "1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "scenario", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t0}}}}
	status := old.DeepCopy()
	status.ResourceVersion = "2"
	status.Status.Phase = corev1.PodRunning
	status.ManagedFields = append(status.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubelet:node-1",
		Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t1})
	bound := old.DeepCopy()
	bound.ResourceVersion = "2"
	bound.Spec.NodeName = "node-1"
	deleting := status.DeepCopy()
	deleting.ResourceVersion = "3"
	deleting.DeletionTimestamp = &t1

	w := newWriteRecorder(trace.New(clock.RealClock{}), nil)
	tests := []struct {
		name                  string
		o                     *observed
		verb, subresource, by string
	}{
		{"create", newObserved(observedAdded, k, nil, old), "create", "", "scenario?"},
		{"status update", newObserved(observedUpdated, k, old, status), "update", "status", "kubelet:node-1?"},
		{"binding", newObserved(observedUpdated, k, old, bound), "bind", "binding", "scenario?"},
		{"delete", newObserved(observedUpdated, k, status, deleting), "delete", "", "kubelet:node-1?"},
		{"removal", newObserved(observedDeleted, k, nil, deleting), "delete", "", "kubelet:node-1?"},
	}
	for _, tc := range tests {
		wr := w.describe(context.Background(), tc.o)
		if wr.Verb != tc.verb || wr.Subresource != tc.subresource || wr.Actor != tc.by {
			t.Errorf("%s: %s %s by %s, want %s %s by %s", tc.name, wr.Verb, wr.Subresource, wr.Actor, tc.verb, tc.subresource, tc.by)
		}
	}
}

// Events of other kinds with lower resourceVersions, which arrive on other
// watches, come first.
func TestWritesInResourceVersionOrder(t *testing.T) {
	w := newWriteRecorder(trace.New(clock.RealClock{}), nil)
	start := time.Now()
	for _, rv := range []uint64{12, 10, 11} {
		w.push(&observed{order: rv, arrived: start})
	}
	if _, wait, ok := w.next(start, true); ok || wait <= 0 {
		t.Fatalf("an event was taken before it was held back: wait %s ok %t", wait, ok)
	}
	var got []uint64
	for {
		o, _, ok := w.next(start.Add(time.Second), true)
		if !ok {
			break
		}
		got = append(got, o.order)
	}
	if len(got) != 3 || got[0] != 10 || got[1] != 11 || got[2] != 12 {
		t.Errorf("order %v, want [10 11 12]", got)
	}
}
