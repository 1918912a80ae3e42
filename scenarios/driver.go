package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
)

// The driver under test is a driver profile (drivers/profile). Scenarios
// see it as variables, ${driver.name}, ${driver.storageClass},
// ${driver.topologyKey}, ${driver.parameter.<key>} (profile.Vars), and a
// scenario says what it needs of the driver (needs:, cluster asks) so that
// a run with a driver that lacks it is skipped with the reason.

// driverPrefix starts the names of the driver variables.
const driverPrefix = "driver."

// namespaceVar is the built-in variable holding the scenario's namespace.
const namespaceVar = "namespace"

// The driver variables that stand for more than text. Used as a whole
// manifest value they keep their type: ${driver.attachRequired} is a
// boolean, ${driver.parameters} a mapping, ${driver.volumeLifecycleModes}
// a list; so one CSIDriver and StorageClass template fits every driver.
const (
	varParameters      = "driver.parameters"
	varBlockParameters = "driver.blockParameters"
	varLifecycleModes  = "driver.volumeLifecycleModes"
	varAttachRequired  = "driver.attachRequired"
	varPodInfoOnMount  = "driver.podInfoOnMount"
)

// structuredDriverVars have no text form: only a whole value may be one.
var structuredDriverVars = []string{varParameters, varBlockParameters, varLifecycleModes}

// driverVarNames are the driver variables every profile may set (the keys
// of profile.Vars, and the structured ones); driver.parameter.<key> and
// driver.blockParameter.<key> are the class parameters.
var driverVarNames = []string{"name", "provisioner", "storageClass", "topologyKey", "sanitizedName", "attachRequired",
	"podInfoOnMount", "fsGroupPolicy", "parameters", "blockParameters", "volumeLifecycleModes"}

// isDriverVarName says whether name is a driver variable's name as written
// in ${...}: driver. then letters, digits and the characters of label keys.
func isDriverVarName(name string) bool {
	rest, ok := strings.CutPrefix(name, driverPrefix)
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		switch {
		case r == '_', r == '.', r == '/', r == '-', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}

// knownDriverVar says whether a scenario may use the driver variable name:
// one of driverVarNames or a class parameter.
func knownDriverVar(name string) bool {
	rest := strings.TrimPrefix(name, driverPrefix)
	if slices.Contains(driverVarNames, rest) {
		return true
	}
	for _, prefix := range []string{"parameter.", "blockParameter."} {
		if key, ok := strings.CutPrefix(rest, prefix); ok && key != "" {
			return true
		}
	}
	return false
}

// driverVars are the text values of the driver variables for p:
// profile.Vars, driver.blockParameter.<key> (the class parameters for raw
// block volumes) and the text forms of the structured values.
func driverVars(p *profile.Profile) map[string]string {
	out := map[string]string{}
	for k, v := range p.Vars() {
		out[driverPrefix+k] = v
	}
	for k, v := range blockParameters(p) {
		out[driverPrefix+"blockParameter."+k] = v
	}
	out[driverPrefix+"sanitizedName"] = sanitizeDriverName(p.Name)
	return out
}

// sanitizeDriverName is the driver name as the external-attacher writes it
// into its finalizer, external-attacher/<name>: every character other than
// a letter, a digit or '-' becomes '-' (external-attacher's
// pkg/controller/util.go, SanitizeDriverName).
func sanitizeDriverName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// driverValues are the typed values of the driver variables for p, used
// when a manifest value is exactly one ${driver.<name>}.
func driverValues(p *profile.Profile) map[string]any {
	params := map[string]any{}
	for k, v := range p.StorageClass.Parameters {
		params[k] = v
	}
	block := map[string]any{}
	for k, v := range blockParameters(p) {
		block[k] = v
	}
	if p.StorageClass.FSType != "" {
		params["csi.storage.k8s.io/fstype"] = p.StorageClass.FSType
	}
	var modes []any
	for _, m := range p.LifecycleModes() {
		modes = append(modes, m)
	}
	return map[string]any{
		varParameters:      params,
		varBlockParameters: block,
		varLifecycleModes:  modes,
		varAttachRequired:  p.AttachRequired(),
		varPodInfoOnMount:  p.Has(profile.PodInfo),
	}
}

// blockParameters are the class parameters for raw block volumes:
// storageClass.blockParameters, or the parameters when it has none.
func blockParameters(p *profile.Profile) map[string]string {
	if p.StorageClass.BlockParameters != nil {
		return p.StorageClass.BlockParameters
	}
	return p.StorageClass.Parameters
}

// profileLabel names a profile in messages: its file's name ("mock"), or
// its driver name when it was not read from a file.
func profileLabel(p *profile.Profile) string {
	if p.File != "" {
		return strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	return p.Name
}

// runsCsisimDriver says whether p starts csisim's own driver processes
// (`csisim driver`), the only driver cluster.driverArgs are flags of.
func runsCsisimDriver(p *profile.Profile) bool {
	for _, c := range []*profile.Command{p.Start.Controller, p.Start.Node, p.Start.Command} {
		if c != nil && c.Path == "{csisim}" && len(c.Args) > 0 && c.Args[0] == "driver" {
			return true
		}
	}
	return false
}

// SkipReason says why s cannot run with the driver of profile p, or ""
// when it can: a capability it needs that p lacks, a cluster ask (a
// capacity, a volume limit, a named flag set) p has no flag for, a driver
// variable p does not set, flags only csisim's own driver takes
// (cluster.driverArgs), or p's notSupported entry for s.
func (s *Scenario) SkipReason(p *profile.Profile) string {
	label := profileLabel(p)
	if why, ok := p.NotSupported[s.Name]; ok {
		return fmt.Sprintf("driver profile %s does not support %s: %s", label, s.Name, why)
	}
	if missing := p.Missing(s.Needs); len(missing) > 0 {
		return fmt.Sprintf("needs %s: %s", listWords(capabilityNames(missing), ""), whyMissing(p, missing))
	}
	if has := hasAsStarted(p, s.Lacks, s.Cluster.Request()); len(has) > 0 {
		return fmt.Sprintf("is about a driver without %s: %s", listWords(capabilityNames(has), ""), whyHas(p, has))
	}
	c := s.Cluster
	switch {
	case p.MaxNodes > 0 && len(c.Nodes) > p.MaxNodes:
		return fmt.Sprintf("the cluster has %d nodes: driver profile %s serves at most %d (maxNodes)", len(c.Nodes), label, p.MaxNodes)
	case c.DriverName != "" && !runsCsisimDriver(p):
		return fmt.Sprintf("cluster.driverName %s starts csisim's own driver under that name: driver profile %s does not run it", c.DriverName, label)
	case len(c.DriverArgs) > 0 && !runsCsisimDriver(p):
		return fmt.Sprintf("cluster.driverArgs %s are flags of csisim's own driver: driver profile %s does not run it", strings.Join(c.DriverArgs, " "), label)
	case c.Capacity != "" && len(p.Flags.Capacity) == 0:
		return fmt.Sprintf("cluster.capacity %s: driver profile %s has no flags.capacity to set it", c.Capacity, label)
	case c.VolumeLimit > 0 && len(p.Flags.VolumeLimit) == 0:
		return fmt.Sprintf("cluster.volumeLimit %d: driver profile %s has no flags.volumeLimit to set it", c.VolumeLimit, label)
	case c.MultiNode && len(p.Flags.MultiNode) == 0 && !p.Has(profile.MultiNode):
		return fmt.Sprintf("cluster.multiNode: driver profile %s has no flags.multiNode", label)
	}
	for _, name := range c.Flags {
		if !p.HasFlagSet(name) {
			return fmt.Sprintf("cluster.flags %s: driver profile %s has no flags.extra.%s", name, label, name)
		}
	}
	vars := driverVars(p)
	for _, name := range s.DriverVars {
		if _, known := p.Known(profile.Topology); name == driverPrefix+"topologyKey" && !known {
			continue // the driver's NodeGetInfo tells, once it is asked
		}
		if _, ok := vars[name]; !ok && !slices.Contains(structuredDriverVars, name) {
			return fmt.Sprintf("uses ${%s}: driver profile %s does not set it", name, label)
		}
	}
	return ""
}

// whyMissing says why the driver lacks the capabilities missing: what the
// running driver did not report, and which the profile does not declare.
func whyMissing(p *profile.Profile, missing []profile.Capability) string {
	var unreported, undeclared []string
	for _, c := range missing {
		if what := p.Unreported(c); what != "" {
			unreported = append(unreported, what)
		} else {
			undeclared = append(undeclared, string(c))
		}
	}
	var whys []string
	if len(unreported) > 0 {
		whys = append(whys, fmt.Sprintf("%s does not report %s", p.Name, strings.Join(unreported, ", nor ")))
	}
	if len(undeclared) > 0 {
		it := "it"
		if len(undeclared) > 1 {
			it = "them"
		}
		if len(unreported) > 0 {
			it = listWords(undeclared, "")
		}
		whys = append(whys, fmt.Sprintf("driver profile %s lacks %s", profileLabel(p), it))
	}
	return strings.Join(whys, "; ")
}

// hasAsStarted returns the capabilities of lacks that the driver of p has
// as it is started for the request r: one a flag set turns on (multiNode)
// only when r asks for it. One still to be asked is not had yet.
func hasAsStarted(p *profile.Profile, lacks []profile.Capability, r profile.Request) []profile.Capability {
	var out []profile.Capability
	for _, c := range lacks {
		has, known := p.Known(c)
		if c == profile.MultiNode && len(p.Flags.MultiNode) > 0 && !r.MultiNode {
			has = false // started without flags.multiNode
		}
		if known && has {
			out = append(out, c)
		}
	}
	return out
}

// whyHas says how the driver has the capabilities has: what it reports, or
// what the profile declares.
func whyHas(p *profile.Profile, has []profile.Capability) string {
	var reported, declared []string
	for _, c := range has {
		if what := p.Reports(c); what != "" {
			reported = append(reported, what)
		} else {
			declared = append(declared, "capabilities."+string(c))
		}
	}
	var whys []string
	if len(reported) > 0 {
		whys = append(whys, fmt.Sprintf("%s reports %s", p.Name, strings.Join(reported, ", ")))
	}
	if len(declared) > 0 {
		whys = append(whys, fmt.Sprintf("driver profile %s declares %s", profileLabel(p), strings.Join(declared, ", ")))
	}
	return strings.Join(whys, "; ")
}

func capabilityNames(cs []profile.Capability) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = string(c)
	}
	return names
}

// Request is what the scenario asks of the cluster, in the terms of a
// driver profile: the nodes and zones, and the capacity, volume limit,
// multi-node access and named flag sets the driver is started for.
func (c Cluster) Request() profile.Request {
	return profile.Request{Nodes: c.Nodes, Zones: c.Zones, SELinux: c.SELinux, Capacity: c.Capacity, VolumeLimit: c.VolumeLimit,
		MultiNode: c.MultiNode, Extra: c.Flags, DriverArgs: c.DriverArgs, HealthMonitor: c.HealthMonitor}
}

// DriverFlags are the extra flags a node plugin of profile p's driver is
// started with for what the scenario asks of the cluster (profile.Args of
// Request). The zone flags are per node; whoever starts each node plugin
// adds them. It assumes SkipReason returned "".
func (c Cluster) DriverFlags(p *profile.Profile) []string {
	return p.Args(c.Request(), true)
}

// builtinVars are the variables every step sees: the driver's and
// ${namespace}.
func builtinVars(p *profile.Profile, namespace string) map[string]string {
	out := driverVars(p)
	out[namespaceVar] = namespace
	return out
}

// withSaved is the variables a step sees: the built-in ones and those the
// steps before it saved.
func withSaved(builtin, saved map[string]string) map[string]string {
	out := maps.Clone(builtin)
	maps.Copy(out, saved)
	return out
}

// lookupVar checks a ${...} reference while parsing: the variables saved
// by earlier steps, ${namespace}, and the driver variables (whose values
// only the run's profile knows), which it records for SkipReason.
func (p *parser) lookupVar(name string) (string, error) {
	switch {
	case name == namespaceVar:
		return "", nil
	case strings.HasPrefix(name, driverPrefix):
		if !knownDriverVar(name) {
			return "", fmt.Errorf("unknown driver variable ${%s}%s; the driver variables are %s, %sparameter.<key> and %sblockParameter.<key>",
				name, didYouMean(strings.TrimPrefix(name, driverPrefix), driverVarNames), driverPrefix+strings.Join(driverVarNames, ", "+driverPrefix), driverPrefix, driverPrefix)
		}
		if !slices.Contains(p.driverVars, name) {
			p.driverVars = append(p.driverVars, name)
		}
		return "", nil
	}
	if _, ok := p.vars[name]; ok {
		return "", nil
	}
	return "", undefinedVarError(name, p.vars)
}

// structuredVarIn returns the first structured driver variable s uses.
func structuredVarIn(s string) string {
	for _, name := range structuredDriverVars {
		if strings.Contains(s, "${"+name+"}") {
			return name
		}
	}
	return ""
}

// structuredVarProblem says where a manifest uses a structured driver
// variable other than as a whole value, or "".
func structuredVarProblem(v any) string {
	switch v := v.(type) {
	case string:
		if name := structuredVarIn(v); name != "" && v != "${"+name+"}" {
			return fmt.Sprintf("${%s} is not text: write it as a whole value (parameters: ${%s}), not inside %q", name, name, v)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if name, ok := mergedVar(k); ok && v[k] != nil {
				return fmt.Sprintf("${%s} as a key adds its entries to the mapping and takes no value (write `${%s}:` alone on its line)", name, name)
			}
			if name := structuredVarIn(k); name != "" {
				if _, ok := mergedVar(k); !ok {
					return fmt.Sprintf("${%s} is not text: write it as a whole value, or as a key alone (${%s}:) to add its entries, not inside the key %q", name, name, k)
				}
			}
			if msg := structuredVarProblem(v[k]); msg != "" {
				return msg
			}
		}
	case []any:
		for _, e := range v {
			if msg := structuredVarProblem(e); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// RenderManifestFile reads the manifest file at path as an apply step of a
// run with the driver of profile p would apply it (in namespace
// "default"), and returns its objects as YAML documents: for tools and
// tests that compare the library's templates with other manifests.
func RenderManifestFile(path string, p *profile.Profile) ([]byte, error) {
	data, err := readInputFile(path)
	if err != nil {
		return nil, err
	}
	objects, errs := readManifests(string(data), path, 1)
	if len(errs) > 0 {
		return nil, ParseErrors(errs)
	}
	st := Step{Apply: &Apply{Objects: objects}}
	st, err = expandStepWith(st, builtinVars(p, defaultNamespace), driverValues(p))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []byte
	for i, m := range st.Apply.Objects {
		js, err := json.Marshal(m.Object)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, m.Line, err)
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(append(out, js...), '\n')
	}
	return out, nil
}
