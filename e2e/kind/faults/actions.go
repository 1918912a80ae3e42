package faults

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Action is one step of a fault plan: a command to run (Command) or a
// client-go call (the other types). The set is closed: Execute knows how
// to perform each. String renders an action the way a person would type or
// describe it, for logs and test failures.
type Action interface {
	fmt.Stringer
	action()
}

// Command runs a program, docker or kubectl, with these arguments (Argv[0]
// is the program).
type Command struct {
	Argv []string
}

// TaintNode adds Taint to Node, or updates the value of the taint with the
// same key and effect. Execute sets TimeAdded of a NoExecute taint.
type TaintNode struct {
	Node  string
	Taint corev1.Taint
}

// UntaintNode removes the taints with Key and Effect from Node; it is not
// an error if there are none.
type UntaintNode struct {
	Node   string
	Key    string
	Effect corev1.TaintEffect
}

// DeletePods deletes the pods in Namespace that match LabelSelector and
// run on Node (any node if Node is empty). It is an error if there are
// none. GracePeriodSeconds 0 deletes at once, as after a crash; nil uses
// the pod's own grace period.
type DeletePods struct {
	Namespace          string
	LabelSelector      string
	Node               string
	GracePeriodSeconds *int64
}

// StaleVolumeAttachment creates, as an outsider, the VolumeAttachment the
// attach/detach controller would make for the volume of the claim
// Namespace/Claim on Node (see apifaults.StaleVolumeAttachment).
type StaleVolumeAttachment struct {
	Namespace string
	Claim     string
	Node      string
}

// WaitNodeReady waits until Node's Ready condition has Status, at most
// Timeout.
type WaitNodeReady struct {
	Node    string
	Status  corev1.ConditionStatus
	Timeout time.Duration
}

func (Command) action()               {}
func (TaintNode) action()             {}
func (UntaintNode) action()           {}
func (DeletePods) action()            {}
func (StaleVolumeAttachment) action() {}
func (WaitNodeReady) action()         {}

func (c Command) String() string {
	quoted := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func (a TaintNode) String() string {
	return fmt.Sprintf("client-go: taint node %s %s", a.Node, a.Taint.ToString())
}

func (a UntaintNode) String() string {
	return fmt.Sprintf("client-go: untaint node %s %s:%s", a.Node, a.Key, a.Effect)
}

func (a DeletePods) String() string {
	where := "any node"
	if a.Node != "" {
		where = "node " + a.Node
	}
	return fmt.Sprintf("client-go: delete pods -n %s -l %s on %s%s", a.Namespace, a.LabelSelector, where, grace(a.GracePeriodSeconds))
}

func (a StaleVolumeAttachment) String() string {
	return fmt.Sprintf("client-go: create the VolumeAttachment of claim %s/%s on node %s", a.Namespace, a.Claim, a.Node)
}

func (a WaitNodeReady) String() string {
	return fmt.Sprintf("client-go: wait until node %s has Ready=%s (at most %s)", a.Node, a.Status, a.Timeout)
}

func grace(s *int64) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf(" --grace-period=%d", *s)
}

// shellQuote quotes s for a POSIX shell if it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
