package faultproxy

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
		// str is what String renders, if not in itself.
		str string
	}{
		{
			in:   `CreateVolume nth=2 times=1 error=Unavailable msg="backend busy"`,
			want: Rule{Method: "CreateVolume", Nth: 2, Times: 1, Action: Action{Kind: ActionError, Code: codes.Unavailable, Message: "backend busy"}},
		},
		{
			in:   "NodeStageVolume vol=pvc-1 delay=2s",
			want: Rule{Method: "NodeStageVolume", VolumeID: "pvc-1", Action: Action{Kind: ActionDelay, Delay: 2 * time.Second}},
		},
		{
			in:   "* p=0.1 drop",
			want: Rule{Method: "*", Probability: 0.1, Action: Action{Kind: ActionDrop}},
		},
		{
			in:   "DeleteVolume error=DEADLINE_EXCEEDED after id=lost-delete",
			want: Rule{ID: "lost-delete", Method: "DeleteVolume", Action: Action{Kind: ActionError, Code: codes.DeadlineExceeded, AfterForward: true}},
			str:  "DeleteVolume error=DeadlineExceeded after id=lost-delete",
		},
		{
			in:   "/csi.v1.Node/* node=n1 hang",
			want: Rule{Method: "/csi.v1.Node/*", NodeID: "n1", Action: Action{Kind: ActionHang}},
		},
		{
			in:   "Probe hang=1.5s",
			want: Rule{Method: "Probe", Action: Action{Kind: ActionHang, Delay: 1500 * time.Millisecond}},
		},
		{
			in:   "CreateVolume times=2 first-per-volume hang after",
			want: Rule{Method: "CreateVolume", Times: 2, FirstPerVolume: true, Action: Action{Kind: ActionHang, AfterForward: true}},
		},
		{
			in:   "NodeGetInfo ok",
			want: Rule{Method: "NodeGetInfo", Action: Action{Kind: ActionOK}},
		},
		{
			in:   `ControllerPublishVolume volume="vol with blanks" error=14 msg="say \"no\""`,
			want: Rule{Method: "ControllerPublishVolume", VolumeID: "vol with blanks", Action: Action{Kind: ActionError, Code: codes.Unavailable, Message: `say "no"`}},
			str:  `ControllerPublishVolume vol="vol with blanks" error=Unavailable msg="say \"no\""`,
		},
		{
			in:   "  Node*   prob=1   error=internal  ",
			want: Rule{Method: "Node*", Probability: 1, Action: Action{Kind: ActionError, Code: codes.Internal}},
			str:  "Node* p=1 error=Internal",
		},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRule(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			str := tc.str
			if str == "" {
				str = tc.in
			}
			if got.String() != str {
				t.Fatalf("String() = %q, want %q", got.String(), str)
			}
			again, err := ParseRule(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip: %+v, %v", again, err)
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "want one rule, got 0"},
		{"Probe drop; Probe ok", "want one rule, got 2"},
		{"error=Unavailable", "must start with a method"},
		{"Probe", "no action"},
		{"Probe drop ok", "more than one action"},
		{"Probe error=Nope", `unknown gRPC code "Nope"`},
		{"Probe error=17", "no gRPC code 17"},
		{"Probe error=OK", "needs a gRPC error code"},
		{"Probe delay=soon", "invalid duration"},
		{"Probe delay=0s", "positive delay"},
		{"Probe hang=-1s", "must not be negative"},
		{"Probe nth=x drop", "nth=x"},
		{"Probe nth=-1 drop", "nth must not be negative"},
		{"Probe times=-2 drop", "times must not be negative"},
		{"Probe p=1.5 drop", "between 0 and 1"},
		{"Probe msg=hi drop", "msg= goes with error= only"},
		{"Probe drop=1", "drop takes no value"},
		{"Probe vol drop", "vol needs a value"},
		{`Probe error=Internal msg="unterminated`, "unterminated quote"},
		{"Probe frobnicate", `unknown rule term "frobnicate"`},
		{"NodeStage drop", `"NodeStage" is not a CSI method`},
		{"[ drop", "method pattern"},
		{"CreateVolume ok after", "cannot come after forwarding"},
		{`Probe drop id="a b"`, "must not contain blanks"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseRule(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	rules, err := ParseRules(`
# slow attach, then a flaky node
ControllerPublishVolume delay=1s; NodeStageVolume p=0.5 error=Unavailable id=flaky

* vol="a;b" drop
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	want := []string{
		"ControllerPublishVolume delay=1s",
		"NodeStageVolume p=0.5 error=Unavailable id=flaky",
		`* vol="a;b" drop`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := ParseRules("Probe drop\nProbe\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error does not name the line: %v", err)
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
		{"NaN probability", Rule{Method: "Probe", Probability: math.NaN(), Action: drop}, "between 0 and 1"},
		{"negative probability", Rule{Method: "Probe", Probability: -0.1, Action: drop}, "between 0 and 1"},
		{"code out of range", Rule{Method: "Probe", Action: Action{Kind: ActionError, Code: 99}}, "needs a gRPC error code"},
		{"unknown action", Rule{Method: "Probe", Action: Action{Kind: 42}}, "unknown action"},
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
	if want := []string{"CreateVolume pvc-a", "NodeStageVolume vol-1"}; !reflect.DeepEqual(fired, want) {
		t.Errorf("fired on %q, want %q", fired, want)
	}
}
