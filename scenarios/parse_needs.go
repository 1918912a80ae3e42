package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/fault"
)

// needs reads needs: a list of driver capabilities (profile.Capabilities).
func (p *parser) needs(n *yaml.Node) []profile.Capability {
	return p.capabilities(n, "needs")
}

// capabilities reads a list of driver capabilities under key (needs:,
// lacks:).
func (p *parser) capabilities(n *yaml.Node, key string) []profile.Capability {
	known := make([]string, len(profile.Capabilities))
	for i, c := range profile.Capabilities {
		known[i] = string(c)
	}
	var out []profile.Capability
	names, _ := p.textList(n, key, func(item *yaml.Node, name string) bool {
		switch {
		case !slices.Contains(known, name):
			hint := didYouMean(name, known)
			if hint == "" {
				hint = "; the capabilities are " + strings.Join(known, ", ")
			}
			p.fail(item, "%s: unknown capability %q%s", key, name, hint)
			return false
		case slices.Contains(out, profile.Capability(name)):
			p.fail(item, "%s: %s is listed twice", key, name)
			return false
		}
		out = append(out, profile.Capability(name))
		return true
	})
	_ = names
	return out
}

// stepNeeds reads a step's needs: only a check (wait, assert,
// consistently) that saves nothing may be left out for a driver without
// them, so that no later step depends on it.
func (p *parser) stepNeeds(n *yaml.Node, st Step) []profile.Capability {
	c := st.check()
	if c == nil {
		if st.Action() != "" {
			p.fail(n, "needs: only a check (wait, assert, consistently) may need a capability, not %s; a scenario's needs: go at its top level", st.Action())
		}
		return nil
	}
	if len(c.Save) > 0 {
		p.fail(n, "needs: a step that saves variables cannot be left out for a driver without what it needs: later steps use what it saves")
		return nil
	}
	return p.needs(n)
}

// clusterAsks reads what the scenario asks of any driver: capacity,
// volumeLimit, multiNode and flags (named flag sets of the profile), and
// of the cluster: its deployment, the health monitor sidecar, its timing.
func (p *parser) clusterAsks(f fields, c *Cluster) {
	if f.has("deploy") {
		c.Deploy = p.deployPath(f.vals["deploy"])
	}
	if f.has("capacity") {
		if s, ok := p.text(f.vals["capacity"], "capacity"); ok {
			if q, err := resource.ParseQuantity(s); err != nil || q.Sign() <= 0 {
				p.fail(f.vals["capacity"], "capacity %q must be a positive quantity such as 2Gi", s)
			} else {
				c.Capacity = s
			}
		}
	}
	if f.has("volumeLimit") {
		if i, ok := p.count(f.vals["volumeLimit"], "volumeLimit"); ok {
			if i == 0 {
				p.fail(f.vals["volumeLimit"], "volumeLimit must be 1 or more (0 would mean no limit)")
			} else {
				c.VolumeLimit = i
			}
		}
	}
	if f.has("multiNode") {
		c.MultiNode, _ = p.boolean(f.vals["multiNode"], "multiNode")
	}
	if f.has("flags") {
		seen := map[string]bool{}
		c.Flags, _ = p.textList(f.vals["flags"], "flags", func(item *yaml.Node, name string) bool {
			switch {
			case strings.HasPrefix(name, "-"):
				p.fail(item, "flags names flag sets of the driver profile (flags.extra), e.g. strictParameters, not %q; flags of csisim's own driver go in driverArgs", name)
				return false
			case seen[name]:
				p.fail(item, "flags: %s is listed twice", name)
				return false
			}
			seen[name] = true
			return true
		})
	}
	if f.has("healthMonitor") {
		c.HealthMonitor, _ = p.boolean(f.vals["healthMonitor"], "healthMonitor")
	}
	if f.has("timing") {
		c.Timing = p.clusterTiming(f.vals["timing"])
	}
}

// inferNeeds adds to s.Needs the capabilities the scenario's cluster asks
// and driver variables imply, keeping the order of profile.Capabilities
// for the inferred ones after the ones written.
func inferNeeds(s *Scenario) []profile.Capability {
	needs := slices.Clone(s.Needs)
	add := func(c profile.Capability) {
		if !slices.Contains(needs, c) {
			needs = append(needs, c)
		}
	}
	// cluster.zones alone labels the nodes, as a real cluster's are
	// whatever its drivers: a scenario whose driver must know them says
	// needs: [zones].
	c := s.Cluster
	if c.Capacity != "" {
		add(profile.Capacity)
	}
	if c.VolumeLimit > 0 {
		add(profile.VolumeLimits)
	}
	if c.MultiNode {
		add(profile.MultiNode)
	}
	for _, name := range c.Flags {
		if need, ok := profile.FlagSetCapability(name); ok {
			add(need) // nodeExpansion: the set only turns it on
		}
	}
	if slices.Contains(s.DriverVars, driverPrefix+"topologyKey") {
		add(profile.Topology)
	}
	// A CSI call the scenario injects a fault into is one the driver must
	// be asked for: ControllerPublishVolume only with attach, ... A call
	// it expects is one only of snapshots; the calls of attach and stage
	// are left out of its expectations for a driver without them
	// (fitToDriver).
	for _, st := range s.allSteps() {
		for _, m := range csiMethodsOf(st) {
			if c, ok := methodNeeds[m]; ok && (st.Fault != nil || !fitted(c)) {
				add(c)
			}
		}
		// Faults that act on what the driver keeps: a private mount
		// namespace changes nothing for a driver that mounts nothing,
		// nor can a mount it never made be held busy;
		// only a driver that keeps its records in {stateDir} can be
		// restarted without them, and one that keeps them in its
		// process's memory loses them in any crash.
		switch f := st.Fault; {
		case f == nil:
		case f.Kind == fault.MissingMountPropagation, f.Kind == fault.MountBusy:
			add(profile.RealMounts)
		case f.Kind == fault.DriverRestart && f.LoseState:
			add(profile.StateDir)
		case f.Kind == fault.DriverRestart, f.Kind == fault.DriverCrash, f.Kind == fault.DriverCrashMidCall:
			add(profile.SurvivesRestart)
		case f.Kind == fault.NodeVolumeLimit:
			add(profile.ChangingVolumeLimits)
		case f.Kind == fault.VolumeHealth:
			add(profile.VolumeHealth)
			add(profile.ChangingVolumeHealth)
		}
	}
	return needs
}

// methodNeeds are the capabilities without which a driver is never asked
// for a CSI method.
var methodNeeds = map[string]profile.Capability{
	"ControllerPublishVolume":   profile.Attach,
	"ControllerUnpublishVolume": profile.Attach,
	"NodeStageVolume":           profile.StageUnstage,
	"NodeUnstageVolume":         profile.StageUnstage,
	"CreateSnapshot":            profile.Snapshots,
	"DeleteSnapshot":            profile.Snapshots,
	"ListSnapshots":             profile.ListSnapshots,
	"CreateVolumeGroupSnapshot": profile.GroupSnapshots,
	"DeleteVolumeGroupSnapshot": profile.GroupSnapshots,
}

// csiMethodsOf are the CSI methods a step names: in a csiCalls check, or
// as the method of a CSI fault.
func csiMethodsOf(st Step) []string {
	if st.Fault != nil && st.Fault.CSI.Method != "" {
		return []string{st.Fault.CSI.Method}
	}
	c := st.check()
	if c == nil || c.CSICalls == nil {
		return nil
	}
	return append(slices.Clone(c.CSICalls.Sequence), c.CSICalls.Contains...)
}

// deployPath reads cluster.deploy: the driver's deployment manifests, a
// file or directory relative to the scenario's, which must exist.
func (p *parser) deployPath(n *yaml.Node) string {
	s, ok := p.nonEmpty(n, "deploy")
	if !ok {
		return ""
	}
	path := filepath.Join(p.baseDir, s)
	if _, err := os.Stat(path); err != nil {
		p.fail(n, "deploy %q: no such file or directory next to the scenario (%s)", s, path)
		return ""
	}
	return path
}
