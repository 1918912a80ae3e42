package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/csisim/csisim/trace"
)

// csiMethods lists the CSI RPCs (spec v1.x), so that a misspelt name in a
// scenario is caught when it loads instead of failing a long run.
var csiMethods = []string{
	// Identity
	"GetPluginInfo", "GetPluginCapabilities", "Probe",
	// Controller
	"CreateVolume", "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume",
	"ValidateVolumeCapabilities", "ListVolumes", "GetCapacity", "ControllerGetCapabilities",
	"CreateSnapshot", "DeleteSnapshot", "ListSnapshots", "ControllerExpandVolume",
	"ControllerGetVolume", "ControllerModifyVolume", "ControllerListVolumeHealth", "ControllerGetVolumeHealth",
	// Node
	"NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume",
	"NodeGetVolumeStats", "NodeExpandVolume", "NodeGetCapabilities", "NodeGetInfo",
	"NodeGetVolumeHealth", "NodeGetStorageHealth",
	// GroupController
	"GroupControllerGetCapabilities", "CreateVolumeGroupSnapshot", "DeleteVolumeGroupSnapshot",
	"GetVolumeGroupSnapshot",
	// SnapshotMetadata
	"GetMetadataAllocated", "GetMetadataDelta",
}

// informationalCSICalls are calls that sidecars and kubelet make whenever
// they like (discovery, health checks, capacity, stats and volume health
// polling); counting them would make every sequence depend on timing.
var informationalCSICalls = []string{
	"GetPluginInfo", "GetPluginCapabilities", "Probe",
	"ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo",
	"GetCapacity", "NodeGetVolumeStats", "ListVolumes",
	"ControllerListVolumeHealth", "ControllerGetVolumeHealth", "NodeGetVolumeHealth", "NodeGetStorageHealth",
}

// controllerCSICalls are the calls the sidecars make for an object they
// watch. The real external-provisioner and external-attacher may make one
// again, at once, when they sync the object a second time before their
// own status update has reached their informer; CSI requires these calls
// to be idempotent, so a repeat is not a second operation.
var controllerCSICalls = []string{
	"CreateVolume", "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume",
	"CreateSnapshot", "DeleteSnapshot", "ControllerExpandVolume", "ControllerModifyVolume",
}

func isCSIMethod(name string) bool { return slices.Contains(csiMethods, name) }

// IsInformationalCSICall says whether a call is one that components make
// whenever they like, which CSI call checks (and csisim diff) leave out.
func IsInformationalCSICall(name string) bool { return slices.Contains(informationalCSICalls, name) }

// csiMethodName strips a full gRPC method ("/csi.v1.Node/NodeStageVolume")
// down to the name scenarios use.
func csiMethodName(verb string) string {
	return verb[strings.LastIndexByte(verb, '/')+1:]
}

// relevantCSICalls keeps the calls a check compares: not informational,
// on volume when it is set, and to driver when it is set.
func relevantCSICalls(calls []trace.Entry, volume, driver string) []trace.Entry {
	var out []trace.Entry
	for _, e := range calls {
		if IsInformationalCSICall(csiMethodName(e.Verb)) {
			continue
		}
		if volume != "" && e.Object != volume {
			continue
		}
		if driver != "" && e.Driver != driver {
			continue
		}
		out = append(out, e)
	}
	return out
}

func (c *CSICallCheck) expectation() string {
	on := ""
	if c.Volume != "" {
		on = " on volume " + c.Volume
	}
	if c.Driver != "" {
		on += " to driver " + c.Driver
	}
	if c.MountFlag != "" {
		on += " with mount flag " + c.MountFlag
	}
	var want string
	switch {
	case c.Contains != nil && len(c.Contains) == 0:
		want = "any CSI calls" + on
	case c.Contains != nil:
		want = fmt.Sprintf("CSI calls%s to include, in order: %s", on, strings.Join(c.Contains, ", "))
	case len(c.Sequence) == 0:
		want = "no CSI calls" + on
	default:
		want = fmt.Sprintf("CSI calls%s to be exactly: %s", on, strings.Join(c.Sequence, ", "))
	}
	if len(c.Unasked) > 0 {
		want += fmt.Sprintf(" (no %s: %s)", strings.Join(c.Unasked, ", "), c.Why)
	}
	return want
}

// evaluate compares the calls recorded so far with the check.
func (c *CSICallCheck) evaluate(all []trace.Entry) verdict {
	calls := relevantCSICalls(all, c.Volume, c.Driver)
	if c.MountFlag != "" {
		calls = slices.DeleteFunc(slices.Clone(calls), func(e trace.Entry) bool {
			return e.Call == nil || !slices.Contains(e.Call.MountFlags, c.MountFlag)
		})
	}
	if c.Contains == nil {
		calls = WithoutSidecarRepeats(calls)
	}
	names := make([]string, len(calls))
	for i, e := range calls {
		names[i] = csiMethodName(e.Verb)
	}
	seen := strings.Join(names, ", ")
	if seen == "" {
		seen = "no calls"
	}
	if c.Contains != nil {
		matched := matchInOrder(c.Contains, names)
		if matched == len(c.Contains) {
			return verdict{held: true, seen: seen}
		}
		return verdict{seen: seen, explain: explainContains(c.Contains, matched, calls)}
	}
	if slices.Equal(c.Sequence, names) {
		return verdict{held: true, seen: seen}
	}
	return verdict{seen: seen, explain: explainSequence(c.Sequence, calls)}
}

// WithoutSidecarRepeats drops a successful controller call that repeats the
// one just before it on the same object (see controllerCSICalls), so that
// an exact sequence means the same on the simulator and on a real control
// plane whose sidecars race their own informers. Failed calls and node
// calls all count: a retry after an error, a kubelet's republish, are
// what a scenario asserts.
func WithoutSidecarRepeats(calls []trace.Entry) []trace.Entry {
	var out []trace.Entry
	for _, e := range calls {
		if n := len(out); n > 0 && e.Err == "" && out[n-1].Err == "" && e.Verb == out[n-1].Verb &&
			e.Object == out[n-1].Object && slices.Contains(controllerCSICalls, csiMethodName(e.Verb)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// matchInOrder returns how many of want appear in seen in order, other
// entries allowed in between; it matches greedily, which finds the longest
// such prefix.
func matchInOrder(want, seen []string) int {
	n := 0
	for _, s := range seen {
		if n < len(want) && s == want[n] {
			n++
		}
	}
	return n
}

// describeCall shows a call as "NodeStageVolume vol-1 (failed: ...)".
func describeCall(e trace.Entry) string {
	s := csiMethodName(e.Verb)
	if e.Object != "" {
		s += " " + e.Object
	}
	if e.Err != "" {
		s += " (failed: " + e.Err + ")"
	}
	return s
}

// explainSequence lays out expected and seen calls side by side and marks
// where they first differ, which is what a driver developer needs to see.
func explainSequence(want []string, calls []trace.Entry) string {
	rows := max(len(want), len(calls))
	first := -1
	table := [][3]string{{"#", "expected", "seen"}}
	for i := range rows {
		w, s, sName := "-", "-", ""
		if i < len(want) {
			w = want[i]
		}
		if i < len(calls) {
			s, sName = describeCall(calls[i]), csiMethodName(calls[i].Verb)
		}
		if first < 0 && (i >= len(want) || i >= len(calls) || w != sName) {
			first = i
		}
		table = append(table, [3]string{fmt.Sprint(i + 1), w, s})
	}
	var b strings.Builder
	switch {
	case len(calls) > len(want) && first == len(want):
		fmt.Fprintf(&b, "%d unexpected call(s) after the expected sequence", len(calls)-len(want))
	case len(calls) < len(want) && first == len(calls):
		fmt.Fprintf(&b, "missing %d call(s) at the end of the sequence", len(want)-len(calls))
	default:
		fmt.Fprintf(&b, "first difference at call %d", first+1)
	}
	b.WriteString(":\n")
	writeTable(&b, table, first+1)
	return b.String()
}

func explainContains(want []string, matched int, calls []trace.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s not seen", want[matched])
	if matched > 0 {
		fmt.Fprintf(&b, " after %s", want[matched-1])
	}
	if rest := want[matched+1:]; len(rest) > 0 {
		fmt.Fprintf(&b, " (nor the calls expected after it: %s)", strings.Join(rest, ", "))
	}
	b.WriteString("; calls seen:\n")
	table := [][3]string{{"#", "seen", ""}}
	for i, e := range calls {
		table = append(table, [3]string{fmt.Sprint(i + 1), describeCall(e), ""})
	}
	if len(calls) == 0 {
		table = append(table, [3]string{"", "none", ""})
	}
	writeTable(&b, table, -1)
	return b.String()
}

// writeTable writes aligned rows, marking row mark (0 is the header) with
// ">>".
func writeTable(b *strings.Builder, rows [][3]string, mark int) {
	var width [3]int
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len(cell))
		}
	}
	for i, r := range rows {
		prefix := "     "
		if i == mark {
			prefix = "  >> "
		}
		line := fmt.Sprintf("%s%*s  %-*s  %s", prefix, width[0], r[0], width[1], r[1], r[2])
		b.WriteString(strings.TrimRight(line, " "))
		if i < len(rows)-1 {
			b.WriteByte('\n')
		}
	}
}
