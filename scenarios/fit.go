package scenarios

import (
	"slices"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
)

// A scenario says what should happen; the CSI calls that follow from it
// depend on the driver. The external-attacher calls no
// ControllerPublishVolume on a driver without PUBLISH_UNPUBLISH_VOLUME
// (its trivial handler, or no VolumeAttachment at all), and the kubelet
// no NodeStageVolume on one without STAGE_UNSTAGE_VOLUME. So the calls a
// csiCalls check expects are fitted to the driver under test as a run
// starts: the calls of a capability it lacks are left out, and the check
// says so. A scenario about attaching or staging itself (a fault on
// those calls, a VolumeAttachment it inspects) declares needs: [attach]
// or [stageUnstage] instead, and is skipped for such a driver.

// unaskedCalls are the CSI methods no component calls on the driver of
// p, and why: for each method, the capability it does not have, in the
// driver's words. A capability the driver is still to be asked for leaves
// its calls expected.
type unaskedCalls struct {
	methods []string
	whys    map[string]string // method: what the driver does not report
	driver  string
}

// capabilityCalls are the capabilities a driver may lack whose calls a
// scenario's expectations leave out, and those calls.
var capabilityCalls = []struct {
	capability profile.Capability
	methods    []string
}{
	{profile.Attach, []string{"ControllerPublishVolume", "ControllerUnpublishVolume"}},
	{profile.StageUnstage, []string{"NodeStageVolume", "NodeUnstageVolume"}},
	// The csi-snapshotter asks about a pre-provisioned snapshot only a
	// driver with LIST_SNAPSHOTS (pkg/snapshotter, GetSnapshotStatus).
	{profile.ListSnapshots, []string{"ListSnapshots"}},
}

// fitted says whether the calls of capability c are left out of a
// scenario's expectations for a driver without it, rather than needed.
func fitted(c profile.Capability) bool {
	for _, cc := range capabilityCalls {
		if cc.capability == c {
			return true
		}
	}
	return false
}

func unaskedCallsOf(p *profile.Profile) unaskedCalls {
	u := unaskedCalls{whys: map[string]string{}, driver: p.Name}
	for _, cc := range capabilityCalls {
		if has, known := p.Known(cc.capability); !known || has {
			continue
		}
		what := p.Unreported(cc.capability)
		if what == "" {
			what = string(cc.capability) // declared false by the profile
		}
		u.methods = append(u.methods, cc.methods...)
		for _, m := range cc.methods {
			u.whys[m] = what
		}
	}
	return u
}

// why says why the methods left out of a check are: what the driver does
// not report, once each, in the order of capabilityCalls.
func (u unaskedCalls) why(left []string) string {
	var whys []string
	for _, m := range u.methods {
		if w := u.whys[m]; slices.Contains(left, m) && !slices.Contains(whys, w) {
			whys = append(whys, w)
		}
	}
	return u.driver + " does not report " + strings.Join(whys, ", nor ")
}

// fitToDriver returns st with its csiCalls check, if any, expecting only
// the calls the driver is asked for.
func fitToDriver(st Step, u unaskedCalls) Step {
	if len(u.methods) == 0 {
		return st
	}
	switch {
	case st.Wait != nil && st.Wait.CSICalls != nil:
		w := *st.Wait
		w.CSICalls = u.fit(w.CSICalls)
		st.Wait = &w
	case st.Assert != nil && st.Assert.CSICalls != nil:
		a := *st.Assert
		a.CSICalls = u.fit(a.CSICalls)
		st.Assert = &a
	case st.Consistently != nil && st.Consistently.CSICalls != nil:
		c := *st.Consistently
		c.CSICalls = u.fit(c.CSICalls)
		st.Consistently = &c
	}
	return st
}

// fit is c without the unasked methods, naming those it left out; a
// check of another driver than the one under test is left as written.
func (u unaskedCalls) fit(c *CSICallCheck) *CSICallCheck {
	out := *c
	if c.OtherDriver {
		return &out
	}
	keep := func(list []string) []string {
		if list == nil {
			return nil
		}
		kept := []string{}
		for _, m := range list {
			if slices.Contains(u.methods, m) {
				if !slices.Contains(out.Unasked, m) {
					out.Unasked = append(out.Unasked, m)
				}
				continue
			}
			kept = append(kept, m)
		}
		return kept
	}
	out.Sequence, out.Contains = keep(c.Sequence), keep(c.Contains)
	if len(out.Unasked) > 0 {
		out.Why = u.why(out.Unasked)
	}
	return &out
}

// FitTo returns the check expecting only the calls the driver of p is
// asked for, as a scenario's csiCalls checks are fitted as a run starts
// (the Go API's CSI call matchers use it): p should be completed with
// what the running driver reported (Profile.Complete).
func (c CSICallCheck) FitTo(p *profile.Profile) CSICallCheck {
	u := unaskedCallsOf(p)
	if len(u.methods) == 0 {
		return c
	}
	return *u.fit(&c)
}
