package profile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Request is what a scenario asks of the cluster it runs on, in terms
// any driver profile can answer: the nodes and their zones, and the
// driver settings the profile's flags carry out.
type Request struct {
	// Nodes are the node names; the first is the controller's in the
	// combined layout.
	Nodes []string
	// Zones gives nodes a zone: their topology.kubernetes.io/zone label,
	// which flags.zone tells the node plugin if the profile has it (a
	// driver without zones is not told, as on a real cluster).
	Zones map[string]string
	// SELinux names the nodes whose kernel has SELinux enabled (the
	// simulated kubelet's; it asks nothing of the driver's flags).
	SELinux []string
	// Capacity is the storage capacity to report, e.g. "3Gi" (flags.capacity).
	Capacity string
	// VolumeLimit is the per-node volume limit, 0 for none (flags.volumeLimit).
	VolumeLimit int
	// MultiNode asks for the MULTI_NODE_* access modes (flags.multiNode).
	MultiNode bool
	// Extra names flag sets of flags.extra, e.g. "strictParameters".
	Extra []string
	// DriverArgs are raw flags of csisim's own driver (a scenario's
	// cluster.driverArgs); only a profile that runs csisim's driver
	// (CSISimDriver) takes them.
	DriverArgs []string
	// HealthMonitor asks for the external-health-monitor sidecar beside
	// the controller plugin; it asks nothing of the driver's flags.
	HealthMonitor bool
}

// Unsupported is a Request a profile cannot carry out; a library runner
// turns it into a skipped scenario with Reason.
type Unsupported struct {
	Profile string // the profile's name, or its file
	Reason  string
}

func (e *Unsupported) Error() string {
	return fmt.Sprintf("not supported by driver profile %s: %s", e.Profile, e.Reason)
}

// label names the profile in messages: its file, else its driver name.
func (p *Profile) label() string {
	if p.File != "" {
		return p.File
	}
	return p.Name
}

// CSISimDriver says whether the profile runs csisim's own driver (`csisim
// driver`, {csisim} as the command), which takes a scenario's raw
// cluster.driverArgs.
func (p *Profile) CSISimDriver() bool {
	for _, c := range []*Command{p.Start.Command, p.Start.Controller, p.Start.Node} {
		if c != nil && c.Path == "{csisim}" {
			return true
		}
	}
	return false
}

// Check says whether the profile can carry out r; the error is an
// *Unsupported naming the first flag the profile lacks for it.
func (p *Profile) Check(r Request) error {
	unsupported := func(format string, args ...any) error {
		return &Unsupported{Profile: p.label(), Reason: fmt.Sprintf(format, args...)}
	}
	if len(r.DriverArgs) > 0 && !p.CSISimDriver() {
		return unsupported("cluster.driverArgs %q are flags of csisim's own driver, which this profile does not run; "+
			"its flags for scenario needs are %s", r.DriverArgs, p.flagSummary())
	}
	if r.Capacity != "" && len(p.Flags.Capacity) == 0 {
		return unsupported("capacity %s asked for, but the profile has no flags.capacity", r.Capacity)
	}
	if r.VolumeLimit > 0 && len(p.Flags.VolumeLimit) == 0 {
		return unsupported("a volume limit of %d per node asked for, but the profile has no flags.volumeLimit", r.VolumeLimit)
	}
	if r.MultiNode && len(p.Flags.MultiNode) == 0 && !p.Has(MultiNode) {
		return unsupported("multi-node access modes asked for, but the profile has no flags.multiNode and no capabilities.multiNode")
	}
	for _, name := range r.Extra {
		if !p.HasFlagSet(name) {
			return unsupported("flag set %q asked for, but the profile has no flags.extra.%s", name, name)
		}
	}
	return nil
}

// capabilityFlagSets are the named flag sets that turn a capability on,
// for a driver that has it only when told (csi-test's mock:
// --node-expand-required). A driver that has it anyway needs no such set.
var capabilityFlagSets = map[string]Capability{"nodeExpansion": NodeExpansion}

// FlagSetCapability is the capability the named flag set turns on, if it
// is one of those (a scenario that asks for the set needs it).
func FlagSetCapability(name string) (Capability, bool) {
	c, ok := capabilityFlagSets[name]
	return c, ok
}

// HasFlagSet says whether the profile can start its driver with the named
// flag set: it has flags.extra.<name>, or the set turns on a capability,
// and then without the set the driver starts as it is and the capability
// (asked of it, or declared) decides whether a scenario runs.
func (p *Profile) HasFlagSet(name string) bool {
	if _, ok := p.Flags.Extra[name]; ok {
		return true
	}
	_, ok := capabilityFlagSets[name]
	return ok
}

// flagSummary lists the flags a profile has for scenario needs.
func (p *Profile) flagSummary() string {
	var have []string
	add := func(key string, flags []string) {
		if len(flags) > 0 {
			have = append(have, fmt.Sprintf("flags.%s %q", key, flags))
		}
	}
	add("zone", p.Flags.Zone)
	add("capacity", p.Flags.Capacity)
	add("volumeLimit", p.Flags.VolumeLimit)
	add("multiNode", p.Flags.MultiNode)
	for _, name := range sortedKeys(p.Flags.Extra) {
		add("extra."+name, p.Flags.Extra[name])
	}
	if len(have) == 0 {
		return "none"
	}
	return strings.Join(have, ", ")
}

// Args are the driver arguments r adds for a plugin, with {capacity} and
// {limit} filled in; forNode is true for a node plugin (flags.volumeLimit
// goes only there). {zone} is left for the launcher, and flags.zone is
// not among them: ZoneArgs are added only on a node with a zone. Args
// assumes Check(r) passed.
func (p *Profile) Args(r Request, forNode bool) []string {
	var out []string
	fill := func(flags []string, placeholder, value string) {
		for _, f := range flags {
			out = append(out, strings.ReplaceAll(f, placeholder, value))
		}
	}
	if r.Capacity != "" {
		fill(p.Flags.Capacity, "{capacity}", r.Capacity)
	}
	if r.VolumeLimit > 0 && forNode {
		fill(p.Flags.VolumeLimit, "{limit}", strconv.Itoa(r.VolumeLimit))
	}
	if r.MultiNode {
		out = append(out, p.Flags.MultiNode...)
	}
	for _, name := range r.Extra {
		out = append(out, p.Flags.Extra[name]...)
	}
	return append(out, r.DriverArgs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
