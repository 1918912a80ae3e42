package csisimtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
)

// The matchers on Nodes: whether a node is Ready, as its kubelet reports
// it and the node lifecycle controller judges it (Unknown once the
// kubelet has stopped posting its status), and which taints it carries.
// Hand them c.Node(name), or any *corev1.Node naming the node.

// BeReady matches a Node whose Ready condition is True. When it is not,
// the message gives the condition's status, reason and message, since
// when, and the node's taints.
func BeReady() types.GomegaMatcher {
	return &matcher{expected: "be Ready", judge: func(actual any) (bool, string, error) {
		node, err := nodeOf("BeReady", actual)
		if err != nil || node == nil {
			return false, "it does not exist", err
		}
		cond := readyCondition(node)
		return cond != nil && cond.Status == corev1.ConditionTrue, nodeState(node), nil
	}}
}

// BeNotReady matches a Node that kubectl shows as NotReady: its Ready
// condition is False (its kubelet says so) or Unknown (its kubelet has
// stopped posting status, as on a lost node). A node that does not exist,
// or has no Ready condition yet, is not NotReady — where
// ShouldNot(BeReady()) would hold.
func BeNotReady() types.GomegaMatcher {
	return &matcher{expected: "be NotReady", judge: func(actual any) (bool, string, error) {
		node, err := nodeOf("BeNotReady", actual)
		if err != nil || node == nil {
			return false, "it does not exist", err
		}
		cond := readyCondition(node)
		return cond != nil && cond.Status != corev1.ConditionTrue, nodeState(node), nil
	}}
}

// HaveTaint matches a Node with a taint of key and, if effects are given,
// one of those effects: HaveTaint("node.kubernetes.io/unreachable",
// corev1.TaintEffectNoExecute) holds once the node lifecycle controller
// has found the node's kubelet gone. The message lists the node's taints.
func HaveTaint(key string, effects ...corev1.TaintEffect) types.GomegaMatcher {
	want := key
	if len(effects) > 0 {
		var names []string
		for _, e := range effects {
			names = append(names, string(e))
		}
		want += ":" + strings.Join(names, " or :")
	}
	return &matcher{expected: "have the taint " + want, judge: func(actual any) (bool, string, error) {
		node, err := nodeOf("HaveTaint", actual)
		if err != nil || node == nil {
			return false, "it does not exist", err
		}
		for _, t := range node.Spec.Taints {
			if t.Key == key && (len(effects) == 0 || slices.Contains(effects, t.Effect)) {
				return true, "it has " + t.ToString(), nil
			}
		}
		return false, taints(node), nil
	}}
}

// nodeOf is the Node a node matcher looks at: an observed one, or a
// *corev1.Node handed over as it is (a function's value, Gomega's own
// Expect); nil if it does not exist.
func nodeOf(matcher string, actual any) (*corev1.Node, error) {
	switch a := actual.(type) {
	case *Observed:
		if a.kind() != "Node" {
			return nil, fmt.Errorf("%s takes a Node; %s is not one", matcher, a.Ref)
		}
		node, _, err := current[corev1.Node](a)
		return node, err
	case *corev1.Node:
		return a, nil
	}
	return nil, fmt.Errorf("%s takes a Node; got %T", matcher, actual)
}

// readyCondition is node's Ready condition; nil if it has none.
func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// nodeState says how ready node is, and its taints.
func nodeState(node *corev1.Node) string {
	cond := readyCondition(node)
	var s string
	switch {
	case cond == nil:
		s = "it has no Ready condition yet"
	case cond.Status == corev1.ConditionTrue:
		s = "it is Ready"
	default:
		s = "it is NotReady: its Ready condition is " + string(cond.Status)
		if cond.Reason != "" {
			s += fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
		}
	}
	if cond != nil && !cond.LastTransitionTime.IsZero() {
		s += " since " + cond.LastTransitionTime.UTC().Format(time.TimeOnly)
	}
	return s + "; " + taints(node)
}

// taints lists node's taints as kubectl taint writes them.
func taints(node *corev1.Node) string {
	if len(node.Spec.Taints) == 0 {
		return "it has no taints"
	}
	var out []string
	for _, t := range node.Spec.Taints {
		out = append(out, t.ToString())
	}
	return "its taints are " + strings.Join(out, ", ")
}
