package diff

import (
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// Call is one CSI call of a snapshot.
type Call struct {
	Method string `json:"method"`
	// Node is the node the call is about: a node service call's node, a
	// controller publish's CSI node ID; empty for the others.
	Node string `json:"node,omitempty"`
	// Status is the gRPC status of a call that failed.
	Status string `json:"status,omitempty"`
}

// String shows a call as "NodeStageVolume (node-1, Internal)".
func (c Call) String() string {
	var about []string
	if c.Node != "" {
		about = append(about, c.Node)
	}
	if c.Status != "" {
		about = append(about, c.Status)
	}
	if len(about) == 0 {
		return c.Method
	}
	return c.Method + " (" + strings.Join(about, ", ") + ")"
}

// csiCalls are the CSI calls by volume placeholder, compared as scenario
// csiCalls checks compare them: informational calls left out, a sidecar's
// immediate repeat of a controller call counted once (the real sidecars
// race their caches).
func (n *Normaliser) csiCalls(calls []trace.Entry) map[string][]Call {
	byVolume := map[string][]trace.Entry{}
	for _, e := range calls {
		if e.Kind != trace.CSI || scenarios.IsInformationalCSICall(e.Verb) {
			continue
		}
		volume := e.Object
		if name, handle, ok := strings.Cut(volume, " -> "); ok {
			volume = handle
			if handle == "" {
				volume = name
			}
		}
		if volume == "" {
			continue
		}
		key := n.name(volume)
		byVolume[key] = append(byVolume[key], e)
	}
	out := map[string][]Call{}
	for key, entries := range byVolume {
		for _, e := range scenarios.WithoutSidecarRepeats(entries) {
			out[key] = append(out[key], callOf(e))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func callOf(e trace.Entry) Call {
	c := Call{Method: e.Verb}
	switch {
	case e.Call != nil:
		c.Node = e.Call.Node
		if c.Node == "" {
			c.Node = e.Call.NodeID
		}
		if e.Call.Code != codes.OK {
			c.Status = e.Call.Code.String()
		}
	case e.Err != "":
		c.Status = "failed"
	}
	return c
}

// callsString shows calls one after the other, "" for none.
func callsString(calls []Call) string {
	s := make([]string, len(calls))
	for i, c := range calls {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}
