package faultproxy

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// TestRuleString: valid rules render in the one line the timeline's Fault
// entries show.
func TestRuleString(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{
			Rule{Method: "CreateVolume", Nth: 2, Times: 1, Action: Action{Kind: ActionError, Code: codes.Unavailable, Message: "backend busy"}},
			`CreateVolume nth=2 times=1 error=Unavailable msg="backend busy"`,
		},
		{
			Rule{Method: "NodeStageVolume", VolumeID: "pvc-1", Action: Action{Kind: ActionDelay, Delay: 2 * time.Second}},
			"NodeStageVolume vol=pvc-1 delay=2s",
		},
		{Rule{Method: "*", Probability: 0.1, Action: Action{Kind: ActionDrop}}, "* p=0.1 drop"},
		{
			Rule{ID: "lost-delete", Method: "DeleteVolume", Action: Action{Kind: ActionError, Code: codes.DeadlineExceeded, AfterForward: true}},
			"DeleteVolume error=DeadlineExceeded after id=lost-delete",
		},
		{Rule{Method: "/csi.v1.Node/*", NodeID: "n1", Action: Action{Kind: ActionHang}}, "/csi.v1.Node/* node=n1 hang"},
		{Rule{Method: "Probe", Action: Action{Kind: ActionHang, Delay: 1500 * time.Millisecond}}, "Probe hang=1.5s"},
		{Rule{Method: "NodeGetInfo", Action: Action{Kind: ActionOK}}, "NodeGetInfo ok"},
		{
			Rule{Method: "ControllerPublishVolume", VolumeID: "vol with blanks", Action: Action{Kind: ActionError, Code: codes.Unavailable, Message: `say "no"`}},
			`ControllerPublishVolume vol="vol with blanks" error=Unavailable msg="say \"no\""`,
		},
		{Rule{Method: "Node*", Probability: 1, Action: Action{Kind: ActionError, Code: codes.Internal}}, "Node* p=1 error=Internal"},
		{Rule{ID: "flaky", Method: "NodeStageVolume", Probability: 0.5, Action: Action{Kind: ActionError, Code: codes.Unavailable}}, "NodeStageVolume p=0.5 error=Unavailable id=flaky"},
		{Rule{Method: "*", VolumeID: "a;b", Action: Action{Kind: ActionDrop}}, `* vol="a;b" drop`},
		{Rule{Method: "*", Nth: 1, VolumeID: "k=v", Action: Action{Kind: ActionDrop}}, `* vol="k=v" drop`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if err := tc.rule.validate(methodNames()); err != nil {
				t.Fatalf("valid rule refused: %v", err)
			}
			if got := tc.rule.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRuleValidation(t *testing.T) {
	names := methodNames()
	drop := Action{Kind: ActionDrop}
	for _, tc := range []struct {
		name string
		rule Rule
		want string // "" for valid
	}{
		{"valid", Rule{Method: "Probe", Action: drop}, ""},
		{"full name of an unknown method is allowed", Rule{Method: "/example.v1.X/Y", Action: drop}, ""},
		{"no method", Rule{Action: drop}, "method is required"},
		{"not a CSI method", Rule{Method: "NodeStage", Action: drop}, `"NodeStage" is not a CSI method`},
		{"bad pattern", Rule{Method: "[", Action: drop}, "method pattern"},
		{"negative nth", Rule{Method: "Probe", Nth: -1, Action: drop}, "nth must not be negative"},
		{"negative times", Rule{Method: "Probe", Times: -2, Action: drop}, "times must not be negative"},
		{"probability above 1", Rule{Method: "Probe", Probability: 1.5, Action: drop}, "between 0 and 1"},
		{"NaN probability", Rule{Method: "Probe", Probability: math.NaN(), Action: drop}, "between 0 and 1"},
		{"negative probability", Rule{Method: "Probe", Probability: -0.1, Action: drop}, "between 0 and 1"},
		{"error without an error code", Rule{Method: "Probe", Action: Action{Kind: ActionError, Code: codes.OK}}, "needs a gRPC error code"},
		{"code out of range", Rule{Method: "Probe", Action: Action{Kind: ActionError, Code: 99}}, "needs a gRPC error code"},
		{"no delay", Rule{Method: "Probe", Action: Action{Kind: ActionDelay}}, "positive delay"},
		{"negative hang limit", Rule{Method: "Probe", Action: Action{Kind: ActionHang, Delay: -time.Second}}, "must not be negative"},
		{"ok after forwarding", Rule{Method: "CreateVolume", Action: Action{Kind: ActionOK, AfterForward: true}}, "cannot come after forwarding"},
		{"no action", Rule{Method: "Probe"}, "unknown action"},
		{"unknown action", Rule{Method: "Probe", Action: Action{Kind: 42}}, "unknown action"},
		{"ID with a blank", Rule{ID: "a b", Method: "Probe", Action: drop}, "must not contain blanks"},
		{"ID with a semicolon", Rule{ID: "a;b", Method: "Probe", Action: drop}, "must not contain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.validate(names)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid rule refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// FirstPerVolume fires on a volume's first matching call only, within
// Times: the retries pass.
func TestFirstPerVolume(t *testing.T) {
	s := newRuleState(Rule{Method: "*Volume", Times: 2, FirstPerVolume: true, Action: Action{Kind: ActionHang, AfterForward: true}}, 1)
	var fired []string
	for _, c := range []Call{
		{Method: "CreateVolume", Name: "pvc-a"},
		{Method: "CreateVolume", Name: "pvc-a"},
		{Method: "NodeStageVolume", VolumeID: "vol-1"},
		{Method: "NodeStageVolume", VolumeID: "vol-1"},
		{Method: "CreateVolume", Name: "pvc-b"}, // Times is spent
	} {
		if s.consider(&c) {
			s.fired++
			fired = append(fired, c.Method+" "+c.Name+c.VolumeID)
		}
	}
	if want := []string{"CreateVolume pvc-a", "NodeStageVolume vol-1"}; !slices.Equal(fired, want) {
		t.Errorf("fired on %q, want %q", fired, want)
	}
}
