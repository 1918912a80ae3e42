package scenarios

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/trace"
)

// leakyHistory has a volume created and never deleted, with no PV left:
// a no-leaked-volume violation.
func leakyHistory() *invariant.History {
	return &invariant.History{
		Entries: []trace.Entry{
			{Seq: 1, Kind: trace.Step, Actor: "scenario", Verb: "apply", Object: "claim"},
			{Seq: 2, Kind: trace.CSI, Actor: "external-provisioner", Verb: "CreateVolume", Object: "pvc-1 -> v1", Detail: "OK",
				Call: &trace.CSICall{Volume: "v1", Name: "pvc-1"}},
		},
		End: invariant.EndState{Observed: true},
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name           string
		expect         []string
		unexpected     int
		missing        []string
		wantInErrorMsg []string
	}{
		{"an unexpected violation", nil, 1, nil,
			[]string{"INVARIANT no-leaked-volume violated: volume v1 (CreateVolume #2) was never deleted", "\n    #2 ", "CSI   external-provisioner     CreateVolume"}},
		{"the expected violation", []string{"no-leaked-volume"}, 0, nil, nil},
		{"an expected violation that did not occur", []string{"no-leaked-volume", "data-durability"}, 0, []string{"data-durability"},
			[]string{"INVARIANT data-durability held, but x.yaml:3 expects it to be violated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Scenario{File: "x.yaml", Expect: Expect{Violations: tt.expect, Line: 3}}
			h := leakyHistory()
			ir := judge(s, h)
			if ir.Checked != len(invariant.All()) || len(ir.Violations) != 1 || len(ir.Unexpected) != tt.unexpected ||
				strings.Join(ir.Missing, ",") != strings.Join(tt.missing, ",") {
				t.Fatalf("judge = %+v", ir)
			}
			msg := (&InvariantError{File: s.File, Result: ir, Entries: h.Entries, ExpectLine: 3}).Error()
			for _, want := range tt.wantInErrorMsg {
				if !strings.Contains(msg, want) {
					t.Errorf("error message\n%s\ndoes not say %q", msg, want)
				}
			}
		})
	}
}

func TestParseExpect(t *testing.T) {
	s, err := Parse("x.yaml", []byte("expect: {violations: [nothing-leaked, data-durability]}\nsteps:\n  - sleep: 1s\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Expect.Violations, ","); got != "nothing-leaked,data-durability" || s.Expect.Line != 1 {
		t.Errorf("expect = %+v", s.Expect)
	}
}

func TestParseExpectErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"expect: {violations: [nothing-leak]}\nsteps:\n  - sleep: 1s\n",
			`x.yaml:1: unknown invariant "nothing-leak" (did you mean "nothing-leaked"?)`},
		{"expect:\n  violations:\n    - rwo-single-node\n    - rwo-single-node\nsteps:\n  - sleep: 1s\n",
			`x.yaml:4: invariant "rwo-single-node" is listed twice`},
		{"expect: {}\nsteps:\n  - sleep: 1s\n", "x.yaml:1: expect needs violations:"},
		{"expect: {violation: [rwo-single-node]}\nsteps:\n  - sleep: 1s\n", "x.yaml:1:"},
		{"expect: {violations: rwo-single-node}\nsteps:\n  - sleep: 1s\n", "x.yaml:1: violations must be a list"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte(tt.src), ".")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tt.src, err, tt.want)
		}
	}
}

// historyBackend is a backend with nothing but a history.
type historyBackend struct{ entries []trace.Entry }

func (b historyBackend) RESTConfig() *rest.Config { return nil }
func (b historyBackend) History() []trace.Entry   { return b.entries }

func TestAFailedStepNamesTheInvariantsBrokenSoFar(t *testing.T) {
	attach := func(seq int, node string) trace.Entry {
		return trace.Entry{Seq: seq, Kind: trace.CSI, Actor: "external-attacher", Verb: "ControllerPublishVolume", Object: "v1", Detail: "OK",
			Call: &trace.CSICall{Volume: "v1", NodeID: node, AccessMode: "SINGLE_NODE_WRITER"}}
	}
	twice := historyBackend{entries: []trace.Entry{attach(1, "node-1"), attach(2, "node-2")}}
	leaky := historyBackend{entries: leakyHistory().Entries}
	for _, tt := range []struct {
		name    string
		backend Backend
		expect  []string
		want    string
	}{
		{"a volume attached to two nodes", twice, nil, "INVARIANT rwo-single-node violated: #2 ControllerPublishVolume"},
		{"the same, expected", twice, []string{"rwo-single-node"}, ""},
		// A run that stopped half-way is not judged by its end.
		{"a volume not deleted yet", leaky, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{Backend: tt.backend}
			s := &Scenario{File: "x.yaml", Expect: Expect{Violations: tt.expect}}
			serr := r.stepError(s, Step{Index: 1, Name: "wait", Line: 2}, errors.New("timed out"))
			msg := serr.Error()
			if tt.want == "" {
				if strings.Contains(msg, "INVARIANT") {
					t.Fatalf("error %q names an invariant", msg)
				}
				return
			}
			if !strings.Contains(msg, "\n  meanwhile: "+tt.want) {
				t.Fatalf("error\n%s\ndoes not say %q", msg, tt.want)
			}
		})
	}
}

// A violation a known upstream bug caused is sorted apart from the ones
// that fail the run, unless the scenario expects its invariant (a
// reproduction of the bug); the failure's report still shows it.
func TestSortViolationsKeepsKnownUpstreamApart(t *testing.T) {
	known := invariant.Violation{Invariant: "csi-call-order", Message: "DeleteVolumeWhileInUse", KnownUpstream: "kubernetes#121937", Entries: []int{1}}
	ordinary := invariant.Violation{Invariant: "rwo-single-node", Message: "two nodes"}
	tests := []struct {
		name                   string
		expected               []string
		found                  []invariant.Violation
		unexpected, knownCount int
		fails                  bool
	}{
		{"only known-upstream", nil, []invariant.Violation{known}, 0, 1, false},
		{"known-upstream and an ordinary one", nil, []invariant.Violation{known, ordinary}, 1, 1, true},
		{"only an ordinary one", nil, []invariant.Violation{ordinary}, 1, 0, true},
		{"known-upstream, its invariant expected", []string{"csi-call-order"}, []invariant.Violation{known}, 0, 0, false},
	}
	for _, tt := range tests {
		ir := sortViolations(tt.expected, tt.found)
		if len(ir.Unexpected) != tt.unexpected || len(ir.KnownUpstream) != tt.knownCount {
			t.Errorf("%s: %d unexpected, %d known-upstream; want %d, %d", tt.name, len(ir.Unexpected), len(ir.KnownUpstream), tt.unexpected, tt.knownCount)
		}
		if fails := len(ir.Unexpected) > 0 || len(ir.Missing) > 0; fails != tt.fails {
			t.Errorf("%s: fails %v, want %v", tt.name, fails, tt.fails)
		}
		msg := (&InvariantError{Result: ir, Entries: []trace.Entry{{Seq: 1, Kind: trace.CSI, Verb: "DeleteVolume"}}}).Error()
		if want := "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: DeleteVolumeWhileInUse\n    #1 "; tt.knownCount > 0 && !strings.Contains(msg, want) {
			t.Errorf("%s: report %q, want it to hold %q", tt.name, msg, want)
		}
	}
}
