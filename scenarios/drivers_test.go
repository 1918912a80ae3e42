package scenarios

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/trace"
)

const twoDrivers = `drivers:
  - {profile: csisim-file, name: shares.csisim.io}
steps:
`

func TestParseDrivers(t *testing.T) {
	s, err := Parse("x.yaml", []byte(twoDrivers+`  - csiError: {method: NodePublishVolume, code: Internal, driver: shares.csisim.io}
  - driverCrash: {plugin: controller, driver: shares.csisim.io}
  - nodePluginMissing: {node: node-1, driver: shares.csisim.io}
  - sidecarRestart: {component: external-provisioner, driver: shares.csisim.io}
  - csiHeal: {}
  - assert: {csiCalls: {driver: shares.csisim.io, sequence: [CreateVolume]}}
  - assert: {csiCalls: {driver: '${driver.name}', sequence: [CreateVolume]}}
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := []ExtraDriver{{Profile: "csisim-file", Name: "shares.csisim.io", Line: 2}}; len(s.Drivers) != 1 || s.Drivers[0] != want[0] {
		t.Errorf("drivers: %+v, want %+v", s.Drivers, want)
	}
	for i, st := range s.Steps[:4] {
		if st.Fault.Driver != "shares.csisim.io" {
			t.Errorf("step %d: fault driver %q", i+1, st.Fault.Driver)
		}
	}
	if s.Steps[4].Fault.Driver != "" {
		t.Errorf("a fault without driver: hits %q, want the driver under test", s.Steps[4].Fault.Driver)
	}
	if c := s.Steps[5].Assert.CSICalls; c.Driver != "shares.csisim.io" || !c.OtherDriver {
		t.Errorf("csiCalls of the other driver: %+v", c)
	}
	if c := s.Steps[6].Assert.CSICalls; c.Driver != "${driver.name}" || c.OtherDriver {
		t.Errorf("csiCalls of the driver under test: %+v", c)
	}
}

func TestParseDriversErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown profile", "drivers:\n  - {profile: csisim-files, name: a.example.com}\nsteps:\n  - sleep: 1s\n",
			[]string{"x.yaml:2:", `there is no shipped driver profile "csisim-files" (did you mean "csisim-file"?)`}},
		{"no name", "drivers:\n  - {profile: csisim-file}\nsteps:\n  - sleep: 1s\n",
			[]string{"x.yaml:2:", "a driver needs name"}},
		{"twice", "drivers:\n  - {profile: csisim-file, name: a.example.com}\n  - {profile: mock, name: a.example.com}\nsteps:\n  - sleep: 1s\n",
			[]string{"x.yaml:3:", "driver a.example.com is listed twice"}},
		{"not a list", "drivers: csisim-file\nsteps:\n  - sleep: 1s\n",
			[]string{"x.yaml:1:", "drivers must be a list of {profile, name}"}},
		{"a fault on an unknown driver", twoDrivers + "  - csiHang: {method: CreateVolume, driver: share.csisim.io}\n",
			[]string{"x.yaml:4:", `step 1 (csiHang): there is no driver "share.csisim.io" in drivers: (shares.csisim.io) (did you mean "shares.csisim.io"?)`}},
		{"a fault on a driver without drivers:", "steps:\n  - driverCrash: {plugin: controller, driver: b.example.com}\n",
			[]string{"x.yaml:2:", "driver b.example.com: the scenario runs no other driver (drivers:); leave out driver:"}},
		{"csiCalls of an unknown driver", twoDrivers + "  - assert: {csiCalls: {driver: nfs.csi.k8s.io, contains: [CreateVolume]}}\n",
			[]string{"x.yaml:4:", `there is no driver "nfs.csi.k8s.io" in drivers:`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src), t.TempDir())
			if err == nil {
				t.Fatal("parsed")
			}
			if !strings.HasPrefix(err.Error(), tc.want[0]) {
				t.Errorf("error %q\ndoes not start with %q", err, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// A csiCalls check with driver: sees that driver's calls alone, and one
// of another driver than the one under test is not fitted to it.
func TestCSICallsOfADriver(t *testing.T) {
	calls := []trace.Entry{
		{Kind: trace.CSI, Verb: "CreateVolume", Object: "a", Driver: "block.example.com"},
		{Kind: trace.CSI, Verb: "CreateVolume", Object: "b", Driver: "files.example.com"},
		{Kind: trace.CSI, Verb: "ControllerPublishVolume", Object: "a", Driver: "block.example.com"},
		{Kind: trace.CSI, Verb: "NodePublishVolume", Object: "b", Driver: "files.example.com"},
	}
	files := &CSICallCheck{Driver: "files.example.com", Sequence: []string{"CreateVolume", "NodePublishVolume"}, OtherDriver: true}
	if v := files.evaluate(calls); !v.held {
		t.Errorf("the files driver's calls: %+v", v)
	}
	block := &CSICallCheck{Driver: "block.example.com", Sequence: []string{"CreateVolume", "ControllerPublishVolume"}}
	if v := block.evaluate(calls); !v.held {
		t.Errorf("the block driver's calls: %+v", v)
	}
	u := unaskedCalls{methods: []string{"ControllerPublishVolume"}, whys: map[string]string{"ControllerPublishVolume": "PUBLISH_UNPUBLISH_VOLUME"}, driver: "block.example.com"}
	if got := u.fit(files); len(got.Unasked) != 0 {
		t.Errorf("another driver's check was fitted to the driver under test: %+v", got)
	}
	if got := u.fit(block); len(got.Unasked) != 1 || len(got.Sequence) != 1 {
		t.Errorf("the driver under test's check was not fitted: %+v", got)
	}
}

// oneDriver is a backend of one driver.
type oneDriver struct{ names []string }

func (oneDriver) RESTConfig() *rest.Config { return &rest.Config{} }

type driverSet struct{ oneDriver }

func (d driverSet) DriverNames() []string { return d.names }

func TestCheckDrivers(t *testing.T) {
	s := &Scenario{File: "x.yaml", Drivers: []ExtraDriver{{Profile: "csisim-file", Name: "shares.csisim.io", Line: 2}}}
	if err := checkDrivers(&Scenario{}, oneDriver{}); err != nil {
		t.Errorf("a scenario without drivers: on a backend of one: %v", err)
	}
	if err := checkDrivers(s, oneDriver{}); err == nil || !strings.Contains(err.Error(), "needs a backend that runs several CSI drivers") {
		t.Errorf("a backend of one driver: %v", err)
	}
	if err := checkDrivers(s, driverSet{oneDriver{[]string{"shares.csisim.io"}}}); err == nil || !strings.Contains(err.Error(), "x.yaml:2: driver shares.csisim.io") {
		t.Errorf("the driver under test is not a driver beside it: %v", err)
	}
	if err := checkDrivers(s, driverSet{oneDriver{[]string{"hostpath.csisim.io", "shares.csisim.io"}}}); err != nil {
		t.Errorf("a backend running both: %v", err)
	}
}
