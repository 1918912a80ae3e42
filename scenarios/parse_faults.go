package scenarios

import (
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/fault"
)

// faultStep reads the step of a fault kind; scenarios/README.md documents
// each. Everything that can be checked before the run is checked here, so
// that a misspelt method or code fails the load, not the run.
func (p *parser) faultStep(kind fault.Kind, n *yaml.Node) *fault.Fault {
	switch kind {
	case fault.NodeLoss, fault.NodeReturn, fault.OutOfService, fault.MissingMountPropagation, fault.KubeletRestart:
		return p.nodeFault(kind, n)
	case fault.NodePluginMissing:
		return p.nodePluginMissing(n)
	case fault.StaleVolumeAttachment:
		return p.staleVolumeAttachment(n)
	case fault.ControllerManagerRestart:
		return p.controllerManagerRestart(n)
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal:
		return p.csiFault(kind, n)
	case fault.DriverCrash, fault.DriverRestart:
		return p.driverFault(kind, n)
	case fault.NodeVolumeLimit:
		return p.nodeVolumeLimit(n)
	case fault.VolumeHealth:
		return p.volumeHealth(n)
	case fault.APIConflict, fault.WatchDrop:
		return p.apiFault(kind, n)
	case fault.SidecarRestart:
		return p.sidecarRestart(n)
	case fault.MountBusy:
		return p.mountBusy(n)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return p.apiServerFault(kind, n)
	}
	p.fail(n, "fault %s has no step format", kind)
	return nil
}

// nodeFault reads a fault step that takes only the node: {node: NAME}.
func (p *parser) nodeFault(kind fault.Kind, n *yaml.Node) *fault.Fault {
	f, ok := p.mapping(n, FaultStepKey(kind), "node")
	if !ok {
		return nil
	}
	if !f.has("node") {
		p.fail(n, "%s needs node: (the node's name)", FaultStepKey(kind))
		return nil
	}
	node, ok := p.node(f.vals["node"])
	if !ok {
		return nil
	}
	return &fault.Fault{Kind: kind, Node: node}
}

// nodePluginMissing reads nodePluginMissing: {node, driver?}.
func (p *parser) nodePluginMissing(n *yaml.Node) *fault.Fault {
	key := FaultStepKey(fault.NodePluginMissing)
	f, ok := p.mapping(n, key, "node", "driver")
	if !ok {
		return nil
	}
	if !f.has("node") {
		p.fail(n, "%s needs node: (the node's name)", key)
		return nil
	}
	flt := &fault.Fault{Kind: fault.NodePluginMissing}
	flt.Node, ok = p.node(f.vals["node"])
	if f.has("driver") {
		flt.Driver, ok = p.driverAnd(ok, f.vals["driver"])
	}
	if !ok {
		return nil
	}
	return flt
}

// node reads a node name, which must be one of cluster.nodes when the
// scenario lists them (and the name uses no variable).
func (p *parser) node(n *yaml.Node) (string, bool) {
	name, ok := p.nonEmpty(n, "node")
	if !ok {
		return "", false
	}
	if len(p.nodes) > 0 && !strings.Contains(name, "${") && !slices.Contains(p.nodes, name) {
		p.fail(n, "there is no node %q in cluster.nodes (%s)%s", name, strings.Join(p.nodes, ", "), didYouMean(name, p.nodes))
		return "", false
	}
	return name, true
}

// staleVolumeAttachment reads {node: NAME, claim: NAME, namespace: NAME}.
func (p *parser) staleVolumeAttachment(n *yaml.Node) *fault.Fault {
	f, ok := p.mapping(n, string(fault.StaleVolumeAttachment), "node", "claim", "namespace")
	if !ok {
		return nil
	}
	if !f.has("node") || !f.has("claim") {
		p.fail(n, "%s needs node: (the node's name) and claim: (the claim whose volume it attaches)", FaultStepKey(fault.StaleVolumeAttachment))
		return nil
	}
	flt := &fault.Fault{Kind: fault.StaleVolumeAttachment}
	if flt.Node, ok = p.node(f.vals["node"]); !ok {
		return nil
	}
	if flt.Claim, ok = p.nonEmpty(f.vals["claim"], "claim"); !ok {
		return nil
	}
	if f.has("namespace") {
		if flt.Namespace, ok = p.nonEmpty(f.vals["namespace"], "namespace"); !ok {
			return nil
		}
	}
	return flt
}

// nodeVolumeLimit reads {node: NAME, limit: N}; limit 0 means none.
func (p *parser) nodeVolumeLimit(n *yaml.Node) *fault.Fault {
	f, ok := p.mapping(n, FaultStepKey(fault.NodeVolumeLimit), "node", "limit")
	if !ok {
		return nil
	}
	if missing := missingFields(f, []string{"node", "limit"}); len(missing) > 0 {
		p.fail(n, "%s needs %s", FaultStepKey(fault.NodeVolumeLimit), listWords(missing, ""))
		return nil
	}
	node, ok := p.node(f.vals["node"])
	limit, ok2 := p.count(f.vals["limit"], "limit")
	if !ok || !ok2 {
		return nil
	}
	return &fault.Fault{Kind: fault.NodeVolumeLimit, Node: node, Limit: int64(limit)}
}

// volumeHealth reads {claim, namespace?, status, reason?, message?}:
// status one of fault.HealthStatuses with a reason, or Healthy without.
func (p *parser) volumeHealth(n *yaml.Node) *fault.Fault {
	key := FaultStepKey(fault.VolumeHealth)
	f, ok := p.mapping(n, key, "claim", "namespace", "status", "reason", "message")
	if !ok {
		return nil
	}
	if missing := missingFields(f, []string{"claim", "status"}); len(missing) > 0 {
		p.fail(n, "%s needs %s", key, listWords(missing, ""))
		return nil
	}
	flt := &fault.Fault{Kind: fault.VolumeHealth}
	flt.Claim, ok = p.nonEmpty(f.vals["claim"], "claim")
	if f.has("namespace") {
		flt.Namespace, ok = p.nonEmptyAnd(ok, f.vals["namespace"], "namespace")
	}
	flt.Health.Status, ok = p.nonEmptyAnd(ok, f.vals["status"], "status")
	if f.has("reason") {
		flt.Health.Reason, ok = p.nonEmptyAnd(ok, f.vals["reason"], "reason")
	}
	if f.has("message") {
		flt.Health.Message, ok = p.nonEmptyAnd(ok, f.vals["message"], "message")
	}
	if !ok {
		return nil
	}
	switch h := flt.Health; {
	case h.Status == fault.Healthy:
		if h.Reason != "" || h.Message != "" {
			p.fail(n, "%s: status %s takes no reason or message: it clears the volume's condition", key, fault.Healthy)
			return nil
		}
	case !slices.Contains(fault.HealthStatuses, h.Status):
		p.fail(n, "%s: status %q is none of %s, %s", key, h.Status, strings.Join(fault.HealthStatuses, ", "), fault.Healthy)
		return nil
	case h.Reason == "":
		p.fail(n, "%s: status %s needs a reason (a CamelCase word, e.g. ReplicaLost)", key, h.Status)
		return nil
	}
	return flt
}

// controllerManagerRestart reads a step that takes no fields: {} or nothing.
func (p *parser) controllerManagerRestart(n *yaml.Node) *fault.Fault {
	r := resolve(n)
	empty := (r.Kind == yaml.MappingNode && len(r.Content) == 0) || (r.Kind == yaml.ScalarNode && r.Tag == "!!null")
	if !empty {
		p.fail(n, "%s takes no fields; write %s: {}", FaultStepKey(fault.ControllerManagerRestart), FaultStepKey(fault.ControllerManagerRestart))
		return nil
	}
	return &fault.Fault{Kind: fault.ControllerManagerRestart}
}

// csiFault reads csiError, csiDelay, csiHang, csiLostAnswer,
// driverCrashMidCall and csiHeal:
//
//	csiError:           {method, code, message?, times?, node?, volume?, plugin?}
//	csiDelay:           {method, duration, times?, node?, volume?, plugin?}
//	csiHang:            {method, limit?, times?, node?, volume?, plugin?}
//	csiLostAnswer:      {method, times, firstAttempt?, node?, volume?, plugin?}
//	driverCrashMidCall: {method, times, firstAttempt?, node?, volume?, plugin?}
//	csiHeal:            {method?, node?, volume?, plugin?}
func (p *parser) csiFault(kind fault.Kind, n *yaml.Node) *fault.Fault {
	fields := []string{"method", "node", "volume", "plugin", "driver"}
	required := []string{"method"}
	switch kind {
	case fault.CSIError:
		fields = append(fields, "code", "message", "times")
		required = append(required, "code")
	case fault.CSIDelay:
		fields = append(fields, "duration", "times")
		required = append(required, "duration")
	case fault.CSIHang:
		fields = append(fields, "limit", "times")
	case fault.CSILostAnswer, fault.DriverCrashMidCall:
		fields = append(fields, "times", "firstAttempt")
		required = append(required, "times")
	case fault.CSIHeal:
		required = nil
	}
	f, ok := p.mapping(n, FaultStepKey(kind), fields...)
	if !ok {
		return nil
	}
	if missing := missingFields(f, required); len(missing) > 0 {
		p.fail(n, "%s needs %s", FaultStepKey(kind), listWords(missing, ""))
		return nil
	}
	flt := &fault.Fault{Kind: kind}
	ok = true
	if f.has("method") {
		flt.CSI.Method, ok = p.csiFaultMethod(f.vals["method"])
	}
	if ok && kind == fault.DriverCrashMidCall && strings.ContainsAny(flt.CSI.Method, `*?[\`) {
		p.fail(f.vals["method"], "%s needs one CSI method, not the pattern %q: the driver dies after that call", FaultStepKey(kind), flt.CSI.Method)
		ok = false
	}
	if f.has("node") {
		flt.Node, ok = p.nodeAnd(ok, f.vals["node"])
	}
	if f.has("volume") {
		flt.CSI.Volume, ok = p.nonEmptyAnd(ok, f.vals["volume"], "volume")
	}
	if f.has("plugin") {
		flt.Plugin, ok = p.pluginAnd(ok, f.vals["plugin"])
	}
	if f.has("driver") {
		flt.Driver, ok = p.driverAnd(ok, f.vals["driver"])
	}
	if f.has("code") {
		flt.CSI.Code, ok = p.grpcCodeAnd(ok, f.vals["code"])
	}
	if f.has("message") {
		flt.CSI.Message, ok = p.nonEmptyAnd(ok, f.vals["message"], "message")
	}
	if f.has("duration") {
		flt.CSI.Delay, ok = p.durationAnd(ok, f.vals["duration"], "duration")
	}
	if f.has("limit") {
		flt.CSI.Delay, ok = p.durationAnd(ok, f.vals["limit"], "limit")
	}
	if f.has("times") {
		flt.Times, ok = p.timesAnd(ok, f.vals["times"], kind != fault.CSILostAnswer && kind != fault.DriverCrashMidCall)
	}
	if ok && kind == fault.CSILostAnswer && flt.Times > MaxLostAnswers {
		p.fail(f.vals["times"], "times must be at most %d for %s, not %d: a driver whose every answer is lost is one that hangs (csiHang)",
			MaxLostAnswers, FaultStepKey(kind), flt.Times)
		ok = false
	}
	if ok && kind == fault.DriverCrashMidCall && flt.Times > MaxCrashesMidCall {
		p.fail(f.vals["times"], "times must be at most %d for %s, not %d: each crash restarts the driver process, and a driver that always crashes is one that is down (driverCrash)",
			MaxCrashesMidCall, FaultStepKey(kind), flt.Times)
		ok = false
	}
	if ok && f.has("firstAttempt") {
		flt.CSI.FirstAttempt, ok = p.boolean(f.vals["firstAttempt"], "firstAttempt")
	}
	if !ok {
		return nil
	}
	return flt
}

// csiFaultMethod reads a CSI method name or a pattern over them.
func (p *parser) csiFaultMethod(n *yaml.Node) (string, bool) {
	m, ok := p.text(n, "method")
	if !ok {
		return "", false
	}
	if err := faultproxy.IsMethod(m); err != nil {
		hint := ""
		if !strings.ContainsAny(m, `*?[\`) {
			hint = didYouMean(m, csiMethods)
		}
		p.fail(n, "%v%s; write a CSI method such as NodeStageVolume or a pattern such as Node*", err, hint)
		return "", false
	}
	return m, true
}

// driverFault reads driverCrash: {plugin, node?} and driverRestart:
// {plugin, node?, state: keep|lose}. A node plugin is one per node, so
// plugin: node needs node:; the controller plugin has no node.
func (p *parser) driverFault(kind fault.Kind, n *yaml.Node) *fault.Fault {
	fields, required := []string{"plugin", "node", "driver"}, []string{"plugin"}
	if kind == fault.DriverRestart {
		fields, required = append(fields, "state"), append(required, "state")
	}
	f, ok := p.mapping(n, FaultStepKey(kind), fields...)
	if !ok {
		return nil
	}
	if missing := missingFields(f, required); len(missing) > 0 {
		p.fail(n, "%s needs %s", FaultStepKey(kind), listWords(missing, ""))
		return nil
	}
	flt := &fault.Fault{Kind: kind}
	flt.Plugin, ok = p.pluginAnd(true, f.vals["plugin"])
	if f.has("node") {
		flt.Node, ok = p.nodeAnd(ok, f.vals["node"])
	}
	if f.has("driver") {
		flt.Driver, ok = p.driverAnd(ok, f.vals["driver"])
	}
	if f.has("state") {
		var state string
		if state, ok = p.textAnd(ok, f.vals["state"], "state"); ok {
			switch state {
			case "keep":
			case "lose":
				flt.LoseState = true
			default:
				p.fail(f.vals["state"], "state must be keep (the plugin finds its state directory as it was) or lose (it starts with an empty one), not %q", state)
				ok = false
			}
		}
	}
	if !ok {
		return nil
	}
	switch {
	case flt.Plugin == fault.Node && flt.Node == "":
		p.fail(n, "%s of plugin: node needs node: (the node whose plugin it is)", FaultStepKey(kind))
		return nil
	case flt.Plugin == fault.Controller && flt.Node != "":
		p.fail(f.keys["node"], "%s of plugin: controller takes no node: (there is one controller plugin)", FaultStepKey(kind))
		return nil
	}
	return flt
}

// apiFault reads apiConflict: {component, times} and watchDrop:
// {component, kind, times}.
func (p *parser) apiFault(kind fault.Kind, n *yaml.Node) *fault.Fault {
	fields := []string{"component", "times"}
	if kind == fault.WatchDrop {
		fields = append(fields, "kind")
	}
	f, ok := p.mapping(n, FaultStepKey(kind), fields...)
	if !ok {
		return nil
	}
	if missing := missingFields(f, fields); len(missing) > 0 {
		p.fail(n, "%s needs %s", FaultStepKey(kind), listWords(missing, ""))
		return nil
	}
	flt := &fault.Fault{Kind: kind}
	flt.Component, ok = p.component(f.vals["component"])
	flt.Times, ok = p.timesAnd(ok, f.vals["times"], false)
	if f.has("kind") {
		var name string
		if name, ok = p.textAnd(ok, f.vals["kind"], "kind"); ok {
			if flt.Resource = watchedResource(name); flt.Resource == "" {
				p.fail(f.vals["kind"], "kind %q is not a resource the simulated components watch; use one of %s", name, strings.Join(watchedResources(), ", "))
				ok = false
			}
		}
	}
	if !ok {
		return nil
	}
	return flt
}

// component reads a component's user agent: one of fault.Components, or
// kubelet:NODE.
func (p *parser) component(n *yaml.Node) (string, bool) {
	c, ok := p.nonEmpty(n, "component")
	if !ok {
		return "", false
	}
	if node, isKubelet := fault.KubeletNode(c); isKubelet {
		if len(p.nodes) > 0 && !strings.Contains(node, "${") && !slices.Contains(p.nodes, node) {
			p.fail(n, "component %q: there is no node %q in cluster.nodes (%s)", c, node, strings.Join(p.nodes, ", "))
			return "", false
		}
		return c, true
	}
	if !slices.Contains(fault.Components, c) {
		p.fail(n, "unknown component %q%s; the components are %s and kubelet:NODE", c, didYouMean(c, fault.Components), strings.Join(fault.Components, ", "))
		return "", false
	}
	return c, true
}

// timesAnd reads times: a whole number above 0, or, where always is
// allowed, "always" (stored as 0: until csi-heal). It reads nothing when
// ok is false, so that one bad field is reported, not a cascade.
func (p *parser) timesAnd(ok bool, n *yaml.Node, always bool) (int, bool) {
	if !ok {
		return 0, false
	}
	r := resolve(n)
	if always && r.Kind == yaml.ScalarNode && r.Tag == "!!str" && r.Value == "always" {
		return 0, true
	}
	var i int
	if r.Kind != yaml.ScalarNode || r.Tag != "!!int" || r.Decode(&i) != nil || i <= 0 {
		want := "a whole number above 0"
		if always {
			want += " or always"
		}
		p.fail(n, "times must be %s, not %s", want, describeNode(r))
		return 0, false
	}
	return i, true
}

// pluginAnd reads plugin: controller or node.
func (p *parser) pluginAnd(ok bool, n *yaml.Node) (fault.Plugin, bool) {
	s, ok := p.textAnd(ok, n, "plugin")
	if !ok {
		return "", false
	}
	switch pl := fault.Plugin(s); pl {
	case fault.Controller, fault.Node:
		return pl, true
	}
	p.fail(n, "plugin must be controller or node, not %q", s)
	return "", false
}

// grpcCodeAnd reads a gRPC error code: Unavailable, UNAVAILABLE or 14.
func (p *parser) grpcCodeAnd(ok bool, n *yaml.Node) (codes.Code, bool) {
	s, ok := p.textAnd(ok, n, "code")
	if !ok {
		return 0, false
	}
	c, err := faultproxy.ParseCode(s)
	switch {
	case err != nil:
		p.fail(n, "%v; write a gRPC code such as Unavailable, RESOURCE_EXHAUSTED or 14", err)
		return 0, false
	case c == 0:
		p.fail(n, "code %s is not an error; a csi-error needs a gRPC error code such as Unavailable", s)
		return 0, false
	}
	return c, true
}

func (p *parser) textAnd(ok bool, n *yaml.Node, field string) (string, bool) {
	if !ok {
		return "", false
	}
	return p.text(n, field)
}

func (p *parser) nonEmptyAnd(ok bool, n *yaml.Node, field string) (string, bool) {
	if !ok {
		return "", false
	}
	return p.nonEmpty(n, field)
}

func (p *parser) nodeAnd(ok bool, n *yaml.Node) (string, bool) {
	if !ok {
		return "", false
	}
	return p.node(n)
}

func (p *parser) durationAnd(ok bool, n *yaml.Node, field string) (time.Duration, bool) {
	if !ok {
		return 0, false
	}
	return p.duration(n, field)
}

// missingFields lists the fields of want that f lacks, as "field:".
func missingFields(f fields, want []string) []string {
	var missing []string
	for _, k := range want {
		if !f.has(k) {
			missing = append(missing, k+":")
		}
	}
	return missing
}

// watchable are the resources the simulated components' informers watch,
// with the names kubectl accepts for them: plural, singular, short names
// and Kind, optionally qualified by group.
var watchable = []struct {
	plural, singular, kind, group string
	short                         []string
}{
	{"pods", "pod", "Pod", "", []string{"po"}},
	{"persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", "", []string{"pvc"}},
	{"persistentvolumes", "persistentvolume", "PersistentVolume", "", []string{"pv"}},
	{"nodes", "node", "Node", "", []string{"no"}},
	{"storageclasses", "storageclass", "StorageClass", "storage.k8s.io", []string{"sc"}},
	{"volumeattachments", "volumeattachment", "VolumeAttachment", "storage.k8s.io", nil},
	{"csinodes", "csinode", "CSINode", "storage.k8s.io", nil},
	{"csidrivers", "csidriver", "CSIDriver", "storage.k8s.io", nil},
	{"csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", "storage.k8s.io", nil},
}

// watchedResource returns the plural resource name kubectl would resolve
// name to, among the watchable ones, or "".
func watchedResource(name string) string {
	base, group, _ := strings.Cut(strings.ToLower(name), ".")
	for _, w := range watchable {
		if group != "" && group != w.group {
			continue
		}
		if base == w.plural || base == w.singular || base == strings.ToLower(w.kind) || slices.Contains(w.short, base) {
			return w.plural
		}
	}
	return ""
}

func watchedResources() []string {
	names := make([]string, len(watchable))
	for i, w := range watchable {
		names[i] = w.plural
	}
	return names
}

// sidecarRestart reads sidecarRestart: {component}, the component one of
// fault.Sidecars.
func (p *parser) sidecarRestart(n *yaml.Node) *fault.Fault {
	key := FaultStepKey(fault.SidecarRestart)
	f, ok := p.mapping(n, key, "component", "driver")
	if !ok {
		return nil
	}
	if !f.has("component") {
		p.fail(n, "%s needs component: (one of %s)", key, strings.Join(fault.Sidecars, ", "))
		return nil
	}
	c, ok := p.nonEmpty(f.vals["component"], "component")
	if !ok {
		return nil
	}
	if !slices.Contains(fault.Sidecars, c) {
		p.fail(f.vals["component"], "component %q is not a sidecar %s restarts%s; use one of %s", c, key, didYouMean(c, fault.Sidecars), strings.Join(fault.Sidecars, ", "))
		return nil
	}
	flt := &fault.Fault{Kind: fault.SidecarRestart, Component: c}
	if f.has("driver") {
		if flt.Driver, ok = p.driverName(f.vals["driver"]); !ok {
			return nil
		}
	}
	return flt
}
