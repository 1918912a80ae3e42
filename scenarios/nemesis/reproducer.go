package nemesis

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
)

// ReproducerInput is what Reproducer rewrites: the scenario file as
// written, the scenario parsed from it, and where the faults of a run
// fired in its steps.
type ReproducerInput struct {
	// Source is the scenario file's text; Scenario was parsed from it.
	Source   []byte
	Scenario *scenarios.Scenario
	Fired    []scenarios.FiredFault
	// FromDir is the directory the scenario's manifest files are relative
	// to; ToDir the one the new file's will be (where it is written).
	FromDir, ToDir string
	// Name is the new scenario's name; Comment heads the file.
	Name    string
	Comment string
}

// Reproducer returns the scenario with the fired faults written as fault
// steps where they fired, so that it runs without the nemesis: a fault
// that fired Offset into a wait or a sleep becomes a sleep of Offset, the
// fault step, and the rest of the wait (its timeout less Offset) or sleep;
// one that fired as a step started goes before that step. The scenario's
// comments, steps and manifests stay as written; manifest files are
// referred to from ToDir.
func Reproducer(in ReproducerInput) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(in.Source, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", in.Scenario.File, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a scenario mapping", in.Scenario.File)
	}
	root := doc.Content[0]
	steps := mappingValue(root, "steps")
	if steps != nil && steps.Kind == yaml.SequenceNode {
		inlined, err := inlineIncludes(steps.Content, in.FromDir, in.FromDir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Scenario.File, err)
		}
		steps.Content = inlined
	}
	if steps == nil || steps.Kind != yaml.SequenceNode || len(steps.Content) != len(in.Scenario.Steps) {
		return nil, fmt.Errorf("%s: the steps: list does not match the scenario's %d steps", in.Scenario.File, len(in.Scenario.Steps))
	}
	setMappingValue(root, "name", scalar(in.Name))
	if root.HeadComment != "" {
		root.HeadComment = in.Comment + "\n#\n" + root.HeadComment
	} else {
		root.HeadComment = in.Comment
	}

	byStep := map[int][]scenarios.FiredFault{}
	for _, f := range in.Fired {
		byStep[f.Step] = append(byStep[f.Step], f)
	}
	var out []*yaml.Node
	for i, node := range steps.Content {
		st := in.Scenario.Steps[i]
		if err := rebaseManifest(node, in.FromDir, in.ToDir); err != nil {
			return nil, err
		}
		fired := byStep[st.Index]
		slices.SortStableFunc(fired, func(a, b scenarios.FiredFault) int { return cmp.Compare(a.Offset, b.Offset) })
		var done time.Duration // of the step's own virtual time, before its faults
		for _, f := range fired {
			if gap := f.Offset - done; gap > 0 {
				out = append(out, sleepStep(gap))
			}
			done = f.Offset
			fn, err := faultStep(f)
			if err != nil {
				return nil, err
			}
			out = append(out, fn)
		}
		switch {
		case done == 0:
			out = append(out, node)
		case st.Wait != nil:
			out = append(out, withTimeout(node, st.Wait.Timeout-done))
		case st.Sleep != nil:
			if rest := st.Sleep.Duration - done; rest > 0 {
				out = append(out, sleepStep(rest))
			}
		default:
			// A step that takes no virtual time saw no fault after it began.
			return nil, fmt.Errorf("step %d (%s) took no virtual time, but a fault fired %s into it", st.Index, st.Action(), done)
		}
	}
	steps.Content = out
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("writing the reproducer: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the reproducer: %w", err)
	}
	return b.Bytes(), nil
}

// rebaseManifest makes an apply step's file: relative to toDir.
func rebaseManifest(step *yaml.Node, fromDir, toDir string) error {
	apply := mappingValue(step, "apply")
	file := mappingValue(apply, "file")
	if file == nil || filepath.IsAbs(file.Value) || fromDir == toDir {
		return nil
	}
	abs, err := filepath.Abs(filepath.Join(fromDir, file.Value))
	if err != nil {
		return fmt.Errorf("manifest %s: %w", file.Value, err)
	}
	to, err := filepath.Abs(toDir)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", file.Value, err)
	}
	rel, err := filepath.Rel(to, abs)
	if err != nil {
		rel = abs
	}
	file.Value = rel
	return nil
}

// withTimeout is a copy of a wait step with its timeout set to d.
func withTimeout(step *yaml.Node, d time.Duration) *yaml.Node {
	cp := *step
	cp.Content = slices.Clone(step.Content)
	for i := 0; i+1 < len(cp.Content); i += 2 {
		if cp.Content[i].Value == "wait" {
			w := *cp.Content[i+1]
			w.Content = slices.Clone(w.Content)
			setMappingValue(&w, "timeout", scalar(d.String()))
			cp.Content[i+1] = &w
		}
	}
	return &cp
}

func sleepStep(d time.Duration) *yaml.Node {
	return mapping("sleep", scalar(d.String()))
}

// faultStep writes a fired fault as a fault step, in the fields
// scenarios/README.md documents for it.
func faultStep(f scenarios.FiredFault) (*yaml.Node, error) {
	fields, err := faultFields(f.Fault)
	if err != nil {
		return nil, err
	}
	fields.Style = yaml.FlowStyle
	name := fmt.Sprintf("nemesis %s (fired at %s)", Describe(f.Fault), FormatAt(f.At))
	return mapping("name", scalar(name), scenarios.FaultStepKey(f.Fault.Kind), fields), nil
}

func faultFields(f fault.Fault) (*yaml.Node, error) {
	m := mapping()
	add := func(key, value string) {
		if value != "" {
			m.Content = append(m.Content, scalar(key), scalar(value))
		}
	}
	times := func() {
		if f.Times > 0 {
			add("times", strconv.Itoa(f.Times))
		}
	}
	switch f.Kind {
	case fault.NodeLoss, fault.NodeReturn, fault.OutOfService, fault.MissingMountPropagation, fault.KubeletRestart, fault.NodePluginMissing:
		add("node", f.Node)
	case fault.ControllerManagerRestart:
	case fault.StaleVolumeAttachment:
		add("node", f.Node)
		add("claim", f.Claim)
		add("namespace", f.Namespace)
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal:
		add("method", f.CSI.Method)
		if f.Kind == fault.CSIError {
			add("code", f.CSI.Code.String())
			add("message", f.CSI.Message)
		}
		if f.CSI.Delay > 0 {
			key := "duration"
			if f.Kind == fault.CSIHang {
				key = "limit"
			}
			add(key, f.CSI.Delay.String())
		}
		if f.Kind != fault.CSIHeal {
			times()
		}
		if f.CSI.FirstAttempt {
			add("firstAttempt", "true")
		}
		add("node", f.Node)
		add("volume", f.CSI.Volume)
		add("plugin", string(f.Plugin))
	case fault.DriverCrash, fault.DriverRestart:
		add("plugin", string(f.Plugin))
		add("node", f.Node)
		if f.Kind == fault.DriverRestart {
			add("state", map[bool]string{false: "keep", true: "lose"}[f.LoseState])
		}
	case fault.SidecarRestart:
		add("component", f.Component)
	case fault.VolumeHealth:
		add("claim", f.Claim)
		add("namespace", f.Namespace)
		add("status", f.Health.Status)
		add("reason", f.Health.Reason)
		add("message", f.Health.Message)
	case fault.MountBusy:
		add("pod", f.Busy.Pod)
		add("namespace", f.Namespace)
		add("volume", f.Busy.Volume)
		add("for", f.Busy.For.String())
	case fault.APIConflict, fault.WatchDrop:
		add("component", f.Component)
		times()
		add("kind", f.Resource)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		apiServerFields(f, add)
		times()
	default:
		return nil, fmt.Errorf("fault %s has no step format", f.Kind)
	}
	return m, nil
}

// mapping makes a mapping node of key, value pairs.
func mapping(pairs ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(pairs); i += 2 {
		m.Content = append(m.Content, scalar(pairs[i].(string)), pairs[i+1].(*yaml.Node))
	}
	return m
}

// scalar is a plain scalar whose type YAML resolves as it reads it: times
// a number, the rest strings.
func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// mappingValue is the value of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMappingValue sets key in mapping m, adding it at the end if absent.
func setMappingValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

// apiServerFields adds the fields of an API server fault but times.
func apiServerFields(f fault.Fault, add func(key, value string)) {
	if f.API.Latency > 0 {
		add("latency", f.API.Latency.String())
	}
	if f.API.Duration > 0 {
		add("duration", f.API.Duration.String())
	}
	if f.API.RetryAfter > 0 {
		add("retryAfter", f.API.RetryAfter.String())
	}
	add("component", f.Component)
}
