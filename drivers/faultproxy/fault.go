package faultproxy

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csisim/csisim/fault"
)

// RuleFor is the rule that makes a CSI fault (csi-error, csi-delay,
// csi-hang, csi-lost-answer, driver-crash-mid-call) happen on a proxy, the one mapping from csisim's fault model to
// rules that every backend uses. The fault's Node becomes the rule's NodeID
// (the node a controller call is about, or the node plugin's own node), its
// Times the rule's Times (0: every matching call). Which proxies get the
// rule — the controller plugin's, the node plugins' — is the backend's
// choice, by Fault.Plugin. csi-heal is not a rule: see Heals.
func RuleFor(f fault.Fault) (Rule, error) {
	r := Rule{Method: f.CSI.Method, VolumeID: f.CSI.Volume, NodeID: f.Node, Times: f.Times}
	switch f.Kind {
	case fault.CSIError:
		r.Action = Action{Kind: ActionError, Code: f.CSI.Code, Message: f.CSI.Message}
	case fault.CSIDelay:
		r.Action = Action{Kind: ActionDelay, Delay: f.CSI.Delay}
	case fault.CSIHang:
		r.Action = Action{Kind: ActionHang, Delay: f.CSI.Delay}
	case fault.CSILostAnswer:
		// Forwarded, then no answer until the caller's own deadline.
		r.Action = Action{Kind: ActionHang, AfterForward: true}
		r.FirstPerVolume = f.CSI.FirstAttempt
	case fault.DriverCrashMidCall:
		// Forwarded, then the driver dies before the answer is passed on.
		r.Action = Action{Kind: ActionCrash, AfterForward: true}
		r.FirstPerVolume = f.CSI.FirstAttempt
	default:
		return Rule{}, fmt.Errorf("%s is not a fault a proxy rule makes", f.Kind)
	}
	if err := r.validate(methodNames()); err != nil {
		return Rule{}, fmt.Errorf("%s: %w", f.Describe(), err)
	}
	return r, nil
}

// Heals reports whether the csi-heal heal removes rule r: every field the
// heal sets must select r. Its method, a name or a pattern, heals the rules
// for the methods it matches and the rules with that very pattern; no
// method heals every method.
func Heals(heal fault.Fault, r Rule) bool {
	if heal.Kind != fault.CSIHeal {
		return false
	}
	if m := heal.CSI.Method; m != "" && m != r.Method {
		if ok, _ := path.Match(m, r.Method); !ok {
			return false
		}
	}
	return (heal.CSI.Volume == "" || heal.CSI.Volume == r.VolumeID) && (heal.Node == "" || heal.Node == r.NodeID)
}

// IsMethod returns nil if method selects CSI calls as a rule's Method does:
// a CSI method's short name ("NodeStageVolume"), or a path.Match pattern
// ("Node*", "*"); else an error saying why not.
func IsMethod(method string) error {
	if method == "" {
		return fmt.Errorf("method is empty (\"*\" for every method)")
	}
	return checkMethod(method, methodNames())
}

// checkMethod checks a rule's method pattern; names are the CSI short names.
func checkMethod(method string, names map[string]bool) error {
	if _, err := path.Match(method, ""); err != nil {
		return fmt.Errorf("method pattern %q: %w", method, err)
	}
	if !strings.ContainsAny(method, `*?[\`) && !strings.HasPrefix(method, "/") && !names[method] {
		return fmt.Errorf("method %q is not a CSI method", method)
	}
	return nil
}

// ParseCode reads a gRPC code by name, in any case, with or without
// underscores (Unavailable, UNAVAILABLE, already_exists), or by number.
func ParseCode(s string) (codes.Code, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > int(codes.Unauthenticated) {
			return 0, fmt.Errorf("no gRPC code %d", n)
		}
		return codes.Code(n), nil
	}
	want := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.ToLower(c.String()) == want {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown gRPC code %q", s)
}

// ServiceMethods lists the short names of the methods of one CSI service
// ("Identity", "Controller", "Node", "GroupController", "SnapshotMetadata"),
// in the order the spec declares them; nil for a service the spec lacks.
func ServiceMethods(service string) []string {
	svc := csi.File_csi_proto.Services().ByName(protoreflect.Name(service))
	if svc == nil {
		return nil
	}
	names := make([]string, svc.Methods().Len())
	for i := range names {
		names[i] = string(svc.Methods().Get(i).Name())
	}
	return names
}
