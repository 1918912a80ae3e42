package faultproxy

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// ActionKind is what a rule does to a call it fires on. The comments say
// what the caller sees.
type ActionKind int

const (
	// ActionNone is no action: the call was forwarded untouched.
	ActionNone ActionKind = iota
	// ActionError answers with Action.Code and Action.Message, exactly
	// as if the driver had.
	ActionError
	// ActionDelay waits Action.Delay, then forwards: the caller gets the
	// driver's answer late, or DeadlineExceeded (from its own deadline)
	// if it stops waiting first, in which case the driver never sees the
	// call.
	ActionDelay
	// ActionHang answers nothing. The caller gets DeadlineExceeded when
	// its deadline passes (or Canceled when it cancels); if Action.Delay
	// is set and passes first, DeadlineExceeded from the proxy; if the
	// proxy stops first, Unavailable. It never hangs forever on its own
	// account, but a caller without a deadline waits until one of those.
	ActionHang
	// ActionDrop closes the caller's connection abruptly, without a
	// reply: the caller gets Unavailable ("error reading from server:
	// EOF" or similar), and so does every other call in flight on that
	// connection; the caller's channel reconnects for its next call.
	ActionDrop
	// ActionOK answers OK with Action.Response, or an empty response if
	// nil, without forwarding: the caller believes the driver did it.
	ActionOK
	// ActionCrash forwards the call and, once the driver has answered,
	// kills the driver (Config.Crash, which also starts it again) before
	// the answer is passed on: the caller gets Unavailable, as a client
	// whose server died mid-call does, and the driver did the work. It
	// always comes after forwarding (AfterForward).
	ActionCrash
)

func (k ActionKind) String() string {
	switch k {
	case ActionNone:
		return "none"
	case ActionError:
		return "error"
	case ActionDelay:
		return "delay"
	case ActionHang:
		return "hang"
	case ActionDrop:
		return "drop"
	case ActionOK:
		return "ok"
	case ActionCrash:
		return "crash"
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// Action is what happens to a call a rule fires on.
type Action struct {
	Kind ActionKind
	// Code and Message are the status ActionError answers with; Code must
	// not be OK. An empty Message says which rule injected the error.
	Code    codes.Code
	Message string
	// Delay is how long ActionDelay waits, and the longest ActionHang
	// hangs (0: until the caller gives up).
	Delay time.Duration
	// Response is what ActionOK answers; nil answers an empty response.
	// It must be the method's response type.
	Response proto.Message
	// AfterForward forwards the call first and acts on the way back:
	// the driver does the work, but the caller gets the error, waits, or
	// loses the connection. It is how to lose an answer. Not for ActionOK.
	AfterForward bool
}

// Rule selects calls and says what to do with them. A call is matched by
// Method, VolumeID and NodeID; of the matching calls, the rule fires on the
// Nth and later ones, at most Times times, each with Probability.
type Rule struct {
	// ID names the rule in the timeline's Fault entries and in
	// RemoveRule; AddRule and SetRules give rules without one "rule-1",
	// "rule-2", ...
	ID string
	// Method matches the short method name ("NodeStageVolume") as a
	// path.Match pattern: "*" matches every method, "Node*" the node
	// service's. A pattern starting with "/" matches the full name
	// ("/csi.v1.Node/*"). A name without wildcards must be a CSI method.
	Method string
	// VolumeID, if set, matches the request's volume ID, or for
	// CreateVolume, which has none yet, the requested name.
	VolumeID string
	// NodeID, if set, matches the call's node (see Call.NodeID).
	NodeID string
	// Nth is the first matching call the rule fires on, counting from 1;
	// 0 is the same as 1.
	Nth int
	// Times is how often the rule fires at most; 0 means no limit. Nth 3
	// Times 1 fires on the third matching call only; Nth 3 on every call
	// from the third; Times 2 on the first two.
	Times int
	// FirstPerVolume limits the rule to the first matching call of each
	// volume (by VolumeID, or for CreateVolume the requested name): a
	// retry for the same volume passes. Calls without a volume count as
	// one volume.
	FirstPerVolume bool
	// Probability, if not 0, is the chance the rule fires on a call it
	// could fire on. The draws come from a generator seeded by
	// Config.Seed and the rule's ID, so the same calls in the same order
	// meet the same fate in every run.
	Probability float64
	Action      Action
}

// validate checks a rule; methods are the CSI short names.
func (r *Rule) validate(methods map[string]bool) error {
	switch {
	case r.Method == "":
		return errors.New("method is required (\"*\" for every method)")
	case strings.ContainsAny(r.ID, " \t\n\";"):
		return fmt.Errorf("ID %q must not contain blanks, quotes or semicolons", r.ID)
	case r.Nth < 0:
		return fmt.Errorf("nth must not be negative, got %d", r.Nth)
	case r.Times < 0:
		return fmt.Errorf("times must not be negative, got %d", r.Times)
	case math.IsNaN(r.Probability) || r.Probability < 0 || r.Probability > 1:
		return fmt.Errorf("probability must be between 0 and 1, got %v", r.Probability)
	}
	if err := checkMethod(r.Method, methods); err != nil {
		return err
	}
	a := r.Action
	switch a.Kind {
	case ActionError:
		if a.Code == codes.OK || a.Code > codes.Unauthenticated {
			return fmt.Errorf("error action needs a gRPC error code, got %v", a.Code)
		}
	case ActionDelay:
		if a.Delay <= 0 {
			return fmt.Errorf("delay action needs a positive delay, got %s", a.Delay)
		}
	case ActionHang:
		if a.Delay < 0 {
			return fmt.Errorf("hang limit must not be negative, got %s", a.Delay)
		}
	case ActionDrop:
	case ActionCrash:
		if !a.AfterForward {
			return errors.New("a crash action kills the driver once it has done the call, so it comes after forwarding (after)")
		}
	case ActionOK:
		if a.AfterForward {
			return errors.New("an ok action answers instead of the driver, so it cannot come after forwarding")
		}
		if a.Response != nil && methods[r.Method] {
			// Checked again when the rule fires, for patterns.
			want := string(a.Response.ProtoReflect().Descriptor().Name())
			if want != r.Method+"Response" {
				return fmt.Errorf("ok action for %s has a %s response", r.Method, want)
			}
		}
	default:
		return fmt.Errorf("unknown action %v", a.Kind)
	}
	return nil
}

// matches reports whether the rule selects the call (before counting).
func (r *Rule) matches(c *Call) bool {
	name := c.Method
	if strings.HasPrefix(r.Method, "/") {
		name = c.FullMethod
	}
	if ok, _ := path.Match(r.Method, name); !ok {
		return false
	}
	if r.VolumeID != "" && r.VolumeID != c.VolumeID && (c.Method != "CreateVolume" || r.VolumeID != c.Name) {
		return false
	}
	return r.NodeID == "" || r.NodeID == c.NodeID
}

// ruleState is a rule with its counters and random generator.
type ruleState struct {
	rule    Rule
	rng     *rand.Rand
	matched int
	fired   int
	seen    map[string]bool // the volumes matched, for FirstPerVolume
}

func newRuleState(r Rule, seed uint64) *ruleState {
	h := fnv.New64a()
	h.Write([]byte(r.ID))
	return &ruleState{rule: r, rng: rand.New(rand.NewPCG(seed, h.Sum64()))}
}

// consider counts the call if it matches and says whether the rule may fire
// on it. Every matching rule counts every call and draws its chance, even
// when an earlier rule fires, so that one rule's pattern of calls does not
// depend on the others'.
func (s *ruleState) consider(c *Call) bool {
	if !s.rule.matches(c) {
		return false
	}
	s.matched++
	if s.rule.FirstPerVolume {
		vol := c.VolumeID
		if c.Method == "CreateVolume" || vol == "" {
			vol = c.Name
		}
		if s.seen[vol] {
			return false
		}
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[vol] = true
	}
	if s.matched < s.rule.Nth {
		return false
	}
	if s.rule.Times > 0 && s.fired >= s.rule.Times {
		return false
	}
	if p := s.rule.Probability; p > 0 && s.rng.Float64() >= p {
		return false
	}
	return true
}

// RuleStatus is a rule with how many calls it matched and fired on.
type RuleStatus struct {
	Rule
	Matched, Fired int
}

// String renders the rule in one line, as the timeline's Fault entries
// name it: the method, then the matchers and counters that are set, then
// the action ("error=CODE [msg=...]", "delay=D", "hang[=D]", "drop", "ok"),
// "after" and "id=ID"; values with blanks, quotes, semicolons or "=" are
// quoted in Go syntax.
func (r Rule) String() string {
	parts := []string{quoteIfNeeded(r.Method)}
	if r.VolumeID != "" {
		parts = append(parts, "vol="+quoteIfNeeded(r.VolumeID))
	}
	if r.NodeID != "" {
		parts = append(parts, "node="+quoteIfNeeded(r.NodeID))
	}
	if r.Nth > 1 {
		parts = append(parts, "nth="+strconv.Itoa(r.Nth))
	}
	if r.Times > 0 {
		parts = append(parts, "times="+strconv.Itoa(r.Times))
	}
	if r.FirstPerVolume {
		parts = append(parts, "first-per-volume")
	}
	if r.Probability > 0 {
		parts = append(parts, "p="+strconv.FormatFloat(r.Probability, 'g', -1, 64))
	}
	a := r.Action
	switch a.Kind {
	case ActionError:
		parts = append(parts, "error="+a.Code.String())
		if a.Message != "" {
			parts = append(parts, "msg="+strconv.Quote(a.Message))
		}
	case ActionDelay:
		parts = append(parts, "delay="+a.Delay.String())
	case ActionHang:
		if a.Delay > 0 {
			parts = append(parts, "hang="+a.Delay.String())
		} else {
			parts = append(parts, "hang")
		}
	case ActionDrop:
		parts = append(parts, "drop")
	case ActionOK:
		parts = append(parts, "ok")
	case ActionCrash:
		parts = append(parts, "crash")
	}
	if a.AfterForward {
		parts = append(parts, "after")
	}
	if r.ID != "" {
		parts = append(parts, "id="+r.ID)
	}
	return strings.Join(parts, " ")
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\";=") {
		return strconv.Quote(s)
	}
	return s
}

// methodNames lists the short names of the CSI methods.
func methodNames() map[string]bool {
	names := map[string]bool{}
	svcs := csi.File_csi_proto.Services()
	for i := range svcs.Len() {
		ms := svcs.Get(i).Methods()
		for j := range ms.Len() {
			names[string(ms.Get(j).Name())] = true
		}
	}
	return names
}
