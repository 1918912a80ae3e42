package scenario

import (
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/trace"
)

// Backend is where a scenario runs: the simulator, a real control plane, a
// kind cluster. Everything a step does to objects goes through the API
// server that RESTConfig points at.
//
// Features that only some backends have are separate interfaces (such as
// CSICallSource), checked before a scenario starts so that a scenario that
// needs one fails at once rather than halfway through.
type Backend interface {
	RESTConfig() *rest.Config
}

// CSICallSource is implemented by backends that can see CSI calls (the
// simulator). csiCalls checks need it.
type CSICallSource interface {
	// CSICalls returns the CSI calls made so far, oldest first; the list
	// only grows. Entries are trace.CSI entries: Verb is the method name,
	// Object the volume ID.
	CSICalls() []trace.Entry
}

// unsupported returns why backend b cannot run step, or "" when it can.
func unsupported(st *Step, b Backend) string {
	var c *Check
	switch {
	case st.Wait != nil:
		c = &st.Wait.Check
	case st.Assert != nil:
		c = &st.Assert.Check
	}
	if c != nil && c.CSICalls != nil {
		if _, ok := b.(CSICallSource); !ok {
			return "csiCalls needs a backend that can see CSI calls (one implementing CSICallSource, such as the simulator); this one cannot"
		}
	}
	return ""
}
