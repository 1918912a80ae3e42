package csisimtest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// matcher is the shape of every matcher here: judge says whether the
// actual matches and, either way, what was seen, in words a failure
// message can quote.
type matcher struct {
	// expected completes "Expected <object> to ..." and "... not to ...".
	expected string
	judge    func(actual any) (bool, string, error)
	seen     string // what the last Match saw
	subject  string // what the last Match looked at
}

func (m *matcher) observesCluster() {}

func (m *matcher) Match(actual any) (bool, error) {
	m.subject = subject(actual)
	ok, seen, err := m.judge(actual)
	m.seen = seen
	return ok, err
}

func (m *matcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected %s to %s, but %s", m.subject, m.expected, m.seen)
}

func (m *matcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected %s not to %s, but %s", m.subject, m.expected, m.seen)
}

// subject names what a matcher looks at.
func subject(actual any) string {
	switch a := actual.(type) {
	case *Observed:
		return a.Ref
	case *Cluster:
		return "the cluster"
	case metav1.Object:
		if isNil(a) {
			return fmt.Sprintf("a nil %T", actual)
		}
		return fmt.Sprintf("%T %s", actual, key(a))
	}
	return fmt.Sprintf("%T", actual)
}

// isNil says whether o is a typed nil (a nil *corev1.Pod a function
// returned), which has no metadata to read.
func isNil(o metav1.Object) bool {
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// needObserved is the error of a matcher that must read the cluster but
// was handed something it cannot read it by.
func needObserved(name string, actual any) error {
	return fmt.Errorf("%s needs an object as the cluster holds it: hand the object itself (or what Apply returned) to c.Eventually, c.Consistently or c.Expect; got %T", name, actual)
}

// current converts an *Observed's object to its typed form, into; false
// if the object is gone.
func current[T any, PT interface {
	*T
	metav1.Object
}](o *Observed) (PT, bool, error) {
	if o.Object == nil {
		return nil, false, nil
	}
	obj, err := typed(o.Object)
	if err != nil {
		return nil, false, err
	}
	t, ok := obj.(PT)
	if !ok {
		return nil, false, fmt.Errorf("%s is a %s, not a %T", o.Ref, o.Object.GetKind(), t)
	}
	return t, true, nil
}

// BeBound matches a PersistentVolumeClaim or a PersistentVolume whose
// phase is Bound. It also takes the typed object itself, as read by the
// test (Gomega's Expect(pvc).To(BeBound())). When it is not bound, the
// message lists the object's events, which usually say why.
func BeBound() types.GomegaMatcher {
	return &matcher{expected: "be Bound", judge: func(actual any) (bool, string, error) {
		var c *Cluster
		if o, ok := actual.(*Observed); ok {
			c = o.Cluster
			if k := o.kind(); k != "PersistentVolumeClaim" && k != "PersistentVolume" {
				return false, "", fmt.Errorf("BeBound takes a PersistentVolumeClaim or a PersistentVolume; %s is neither", o.Ref)
			}
			if o.Object == nil {
				return false, "it does not exist", nil
			}
			obj, err := typed(o.Object)
			if err != nil {
				return false, "", err
			}
			actual = obj
		}
		var phase, events string
		switch obj := actual.(type) {
		case *corev1.PersistentVolumeClaim:
			if obj == nil {
				return false, "it is nil", nil
			}
			phase = string(obj.Status.Phase)
			if obj.Status.Phase == corev1.ClaimBound {
				return true, "it is Bound to " + obj.Spec.VolumeName, nil
			}
			events = c.eventsOn(obj)
		case *corev1.PersistentVolume:
			if obj == nil {
				return false, "it is nil", nil
			}
			phase = string(obj.Status.Phase)
			if obj.Status.Phase == corev1.VolumeBound {
				return true, "it is Bound", nil
			}
			events = c.eventsOn(obj)
		default:
			return false, "", fmt.Errorf("BeBound takes a PersistentVolumeClaim or a PersistentVolume; got %T", actual)
		}
		if phase == "" {
			phase = "without a phase"
		}
		return false, "it is " + phase + events, nil
	}}
}

// BeRunning matches a Pod that is Running with every CSI volume its
// containers use set up: published for the pod (a successful
// NodePublishVolume not undone since), and, with a driver that mounts for
// real, mounted there. A pod Running without its volume would write to an
// empty directory; this matcher does not let that pass.
func BeRunning() types.GomegaMatcher {
	return &matcher{expected: "be Running with its volumes set up", judge: func(actual any) (bool, string, error) {
		o, ok := actual.(*Observed)
		if !ok {
			return false, "", needObserved("BeRunning", actual)
		}
		pod, exists, err := current[corev1.Pod](o)
		if err != nil || !exists {
			return false, "it does not exist", err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return false, "it is " + podState(pod) + o.Cluster.eventsOn(pod), nil
		}
		problems, err := o.Cluster.unsetVolumes(pod)
		if err != nil {
			return false, "", err
		}
		if len(problems) > 0 {
			return false, "it is Running and " + strings.Join(problems, "; "), nil
		}
		return true, "it is Running with its volumes set up", nil
	}}
}

// podState says where a pod that is not Running is: its phase and its
// conditions that do not hold, with their reasons.
func podState(pod *corev1.Pod) string {
	s := string(pod.Status.Phase)
	if s == "" {
		s = "without a phase"
	}
	var why []string
	for _, cond := range pod.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			why = append(why, strings.TrimSpace(fmt.Sprintf("%s=%s %s %s", cond.Type, cond.Status, cond.Reason, cond.Message)))
		}
	}
	if pod.Spec.NodeName == "" {
		why = append(why, "not scheduled")
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// unsetVolumes says which of pod's CSI volumes are not set up for it.
func (c *Cluster) unsetVolumes(pod *corev1.Pod) ([]string, error) {
	var mounts []string
	realMounts := c.profile.Has(profile.RealMounts)
	if realMounts {
		var err error
		if mounts, err = c.sim.KubeletMounts(); err != nil {
			return nil, fmt.Errorf("listing the kubelets' mounts: %w", err)
		}
	}
	var problems []string
	for _, v := range invariant.PodVolumes(c.Timeline(), pod) {
		if len(v.Targets) == 0 {
			problems = append(problems, fmt.Sprintf("its %s volume %q is not published for it (no NodePublishVolume for pod %s)", v.What, v.Name, pod.UID))
			continue
		}
		if realMounts && !slices.ContainsFunc(v.Targets, func(t string) bool { return slices.Contains(mounts, t) }) {
			problems = append(problems, fmt.Sprintf("its %s volume %q is published at %s, but nothing is mounted there", v.What, v.Name, strings.Join(v.Targets, ", ")))
		}
	}
	return problems, nil
}

// BeGone matches an object that no longer exists in the cluster (nor has
// been replaced by a new object of the same name). Hand it the object
// itself, or what Apply returned.
func BeGone() types.GomegaMatcher {
	return &matcher{expected: "be gone", judge: func(actual any) (bool, string, error) {
		o, ok := actual.(*Observed)
		if !ok {
			return false, "", needObserved("BeGone", actual)
		}
		if o.Object == nil {
			return true, "it is gone", nil
		}
		if o.Object.GetDeletionTimestamp() == nil {
			return false, "it still exists, not being deleted", nil
		}
		return false, "it still exists, " + terminating(o.Object), nil
	}}
}

// BeTerminating matches an object that is being deleted and is still
// there: its deletionTimestamp is set, and its finalizers or, for a pod,
// its kubelet have not let it go yet — what kubectl shows as Terminating.
// A pod on a lost node stays so until it is force-deleted
// (Cluster.ForceDelete); a claim a pod still uses, until the pod is gone.
// It also takes an object as read by the test (a function's value).
func BeTerminating() types.GomegaMatcher {
	return &matcher{expected: "be terminating", judge: func(actual any) (bool, string, error) {
		var obj metav1.Object
		switch a := actual.(type) {
		case *Observed:
			if a.Object != nil {
				obj = a.Object
			}
		case metav1.Object:
			if !isNil(a) {
				obj = a
			}
		default:
			return false, "", fmt.Errorf("BeTerminating takes an object; got %T", actual)
		}
		switch {
		case obj == nil:
			return false, "it does not exist", nil
		case obj.GetDeletionTimestamp() == nil:
			return false, "it is not being deleted (it has no deletionTimestamp)", nil
		}
		return true, "it is " + terminating(obj), nil
	}}
}

// terminating describes an object being deleted: since when, its grace
// period, and the finalizers that hold it.
func terminating(obj metav1.Object) string {
	s := "terminating since " + obj.GetDeletionTimestamp().UTC().Format(time.TimeOnly)
	if g := obj.GetDeletionGracePeriodSeconds(); g != nil {
		s += fmt.Sprintf(" (grace period %ds)", *g)
	}
	if f := obj.GetFinalizers(); len(f) > 0 {
		s += ", held by finalizers " + strings.Join(f, ", ")
	}
	return s
}

// HaveCSICalls matches when the CSI calls are exactly methods, in order
// ("CreateVolume", "ControllerPublishVolume", "NodeStageVolume", ...), as
// a scenario's csiCalls: {sequence: [...]} does: informational calls
// (Probe, NodeGetInfo, GetCapacity...) are left out, and so is a sidecar's
// immediate repeat of a successful call. On a claim or a volume, only the
// calls on its volume count; on the Cluster, every call.
func HaveCSICalls(methods ...string) types.GomegaMatcher {
	return csiCallMatcher(scenarios.CSICallCheck{Sequence: methods})
}

// ContainCSICalls matches when the CSI calls include methods in that
// order, other calls allowed between them, as a scenario's csiCalls:
// {contains: [...]} does; on a claim, a volume or the Cluster as
// HaveCSICalls.
func ContainCSICalls(methods ...string) types.GomegaMatcher {
	if methods == nil {
		methods = []string{} // contains nothing: not a sequence check
	}
	return csiCallMatcher(scenarios.CSICallCheck{Contains: methods})
}

func csiCallMatcher(check scenarios.CSICallCheck) types.GomegaMatcher {
	m := &matcher{}
	m.judge = func(actual any) (bool, string, error) {
		var c *Cluster
		switch a := actual.(type) {
		case *Cluster:
			c = a
		case *Observed:
			c = a.Cluster
			volume, err := a.volumeHandle()
			if err != nil {
				return false, "", err
			}
			if volume == "" {
				m.expected = "have CSI calls on its volume"
				return false, "it has no volume yet", nil
			}
			check.Volume = volume
		default:
			return false, "", fmt.Errorf("the CSI call matchers take the Cluster, or a claim or volume handed to c.Eventually or c.Expect; got %T", actual)
		}
		// What follows from the test depends on the driver: no
		// ControllerPublishVolume without attach, no NodeStageVolume
		// without stage (scenarios.CSICallCheck.FitTo).
		check := check.FitTo(c.profile.Complete(c.sim.DriverInfo()))
		calls := c.CSICalls()
		if check.Volume != "" {
			calls = callsOnVolume(calls, check.Volume)
		}
		v := check.Evaluate(calls)
		m.expected = strings.TrimPrefix(v.Expected, "CSI calls")
		m.expected = "have CSI calls" + m.expected
		if check.Contains == nil && len(check.Sequence) == 0 {
			m.expected = "have " + v.Expected
		}
		seen := "the calls were: " + v.Seen
		if v.Explain != "" {
			seen += "\n" + v.Explain
		}
		return v.Held, seen, nil
	}
	return m
}

// volumeHandle is the CSI volume ID of an observed claim or volume, from
// the object or, once it is gone, from the timeline; "" if it has none.
func (o *Observed) volumeHandle() (string, error) {
	kind, namespace, name := o.kind(), o.ref.namespace, o.ref.name
	if kind != "PersistentVolumeClaim" && kind != "PersistentVolume" {
		return "", fmt.Errorf("CSI calls are matched on a PersistentVolumeClaim or a PersistentVolume; %s is neither", o.Ref)
	}
	if namespace == "" {
		namespace = "default"
	}
	// The last PV the timeline shows for the object: the claim's bound
	// volume, or the volume itself.
	handle := ""
	for _, e := range o.Cluster.Timeline() {
		if e.Kind != trace.API || e.Write == nil {
			continue
		}
		pv, ok := e.Write.Object.(*corev1.PersistentVolume)
		if !ok || pv.Spec.CSI == nil {
			continue
		}
		ref := pv.Spec.ClaimRef
		if (kind == "PersistentVolume" && pv.Name == name) ||
			(kind == "PersistentVolumeClaim" && ref != nil && ref.Namespace == namespace && ref.Name == name &&
				(o.uid == "" || ref.UID == "" || string(ref.UID) == o.uid)) {
			handle = pv.Spec.CSI.VolumeHandle
		}
	}
	return handle, nil
}

// kind is the observed object's Kind, without its group.
func (o *Observed) kind() string { return strings.SplitN(o.ref.kind, ".", 2)[0] }

// callsOnVolume keeps the calls on volume, the CSI volume ID: those the
// timeline names it in, and the CreateVolume calls that made it or failed
// to (the timeline names a CreateVolume by the name it asks for, which the
// external-provisioner makes the PersistentVolume's name). Each is named
// by the volume ID, as the csiCalls check's volume filter wants.
func callsOnVolume(calls []trace.Entry, volume string) []trace.Entry {
	pvName := ""
	for _, e := range calls {
		if e.Call != nil && e.Call.Volume == volume && e.Call.Name != "" {
			pvName = e.Call.Name
		}
	}
	var out []trace.Entry
	for _, e := range calls {
		if e.Object == volume || (e.Call != nil && (e.Call.Volume == volume || (pvName != "" && e.Call.Name == pvName))) {
			e.Object = volume
			out = append(out, e)
		}
	}
	return out
}

// HaveEvent matches an object that has an Event with reason and, if
// given, a message containing messageSubstring. The message lists the
// object's events.
func HaveEvent(reason string, messageSubstring ...string) types.GomegaMatcher {
	expected := fmt.Sprintf("have an Event with reason %s", reason)
	sub := strings.Join(messageSubstring, " ")
	if sub != "" {
		expected += fmt.Sprintf(" and a message containing %q", sub)
	}
	return &matcher{expected: expected, judge: func(actual any) (bool, string, error) {
		o, ok := actual.(*Observed)
		if !ok {
			return false, "", needObserved("HaveEvent", actual)
		}
		events, err := o.Cluster.events(o.ref.namespace, o.kind(), o.ref.name, o.uid)
		if err != nil {
			return false, "", err
		}
		for _, ev := range events {
			if ev.Reason == reason && strings.Contains(ev.Message, sub) {
				return true, "it has: " + describeEvent(ev), nil
			}
		}
		return false, "its events were:" + listEvents(events), nil
	}}
}

// HaveNoInvariantViolations matches the Cluster when every invariant
// csisim checks after a scenario holds over the run so far — its history
// of API writes and CSI calls, and the cluster as it is now (a volume on
// two nodes at once, a pod Running without its volume, calls out of CSI's
// order, mounts or attachments left behind...). The message names each
// violation and the timeline entries that show it. A violation a known
// Kubernetes bug caused (scenarios.InvariantResult.KnownUpstream) does not
// fail the match, but the test's log shows it, a KNOWN line each.
func HaveNoInvariantViolations() types.GomegaMatcher {
	return &matcher{expected: "have no invariant violations", judge: func(actual any) (bool, string, error) {
		c, ok := actual.(*Cluster)
		if !ok {
			return false, "", fmt.Errorf("HaveNoInvariantViolations takes the Cluster; got %T", actual)
		}
		res, entries, err := c.invariants()
		if err != nil {
			return false, "", err
		}
		known := scenarios.KnownReport(res.KnownUpstream, entries)
		if known != "" {
			// Not the driver's doing and no failure, but never silent:
			// the test's log shows each, as csisim run prints them.
			c.t.Logf("csisimtest: a known Kubernetes bug broke invariants (not a failure):\n%s", known)
		}
		if len(res.Unexpected) == 0 {
			if known != "" {
				return true, fmt.Sprintf("all %d invariants held but those a known Kubernetes bug broke:\n%s", res.Checked, known), nil
			}
			return true, fmt.Sprintf("all %d invariants held", res.Checked), nil
		}
		ierr := &scenarios.InvariantError{Result: res, Entries: entries}
		return false, fmt.Sprintf("%d of %d invariants were violated:\n%s", len(res.Unexpected), res.Checked, ierr.Error()), nil
	}}
}

// ensure every matcher is one of this package's (handed *Observed).
var _ clusterMatcher = &matcher{}
