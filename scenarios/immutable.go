package scenarios

import (
	"context"
	"fmt"
	"strings"
)

// A real cluster has its driver deployed (deploy/kubernetes) before a
// scenario runs, CSIDriver included, and kube-apiserver refuses a change of
// a CSIDriver's immutable fields — spec.attachRequired and
// spec.volumeLifecycleModes (pkg/apis/storage/validation,
// ValidateCSIDriverUpdate). On the simulator each scenario starts a cluster
// of its own, where its CSIDriver is created, not changed. So on a backend
// that is not simulated, a scenario whose CSIDriver differs from the
// cluster's in one of them cannot run there as written; it is skipped,
// saying so, before anything is changed.

// csiDriverDefaults are what kube-apiserver sets an immutable field of a
// CSIDriver to when a manifest leaves it out (pkg/apis/storage/v1
// defaults: attachRequired true, volumeLifecycleModes [Persistent]).
var csiDriverDefaults = map[string]any{
	"attachRequired":       true,
	"volumeLifecycleModes": []any{"Persistent"},
}

// csiDriverConflict says which CSIDriver of the scenario's apply steps
// would change an immutable field of the cluster's CSIDriver of that name;
// "" when none would. A CSIDriver the scenario deletes before applying it
// again is its own to make, and one whose manifest needs a variable saved
// during the run cannot be judged before it.
func (r *Runner) csiDriverConflict(ctx context.Context, s *Scenario, objects objectStore, nodes map[string]string) (string, error) {
	if _, ok := r.Backend.(Simulated); ok {
		return "", nil
	}
	prof := r.profileFor(s)
	deleted := map[string]bool{}
	for _, raw := range s.allSteps() {
		if raw.Delete != nil && isCSIDriverKind(raw.Delete.Object.Kind) {
			deleted[raw.Delete.Object.Name] = true
		}
		if raw.Apply == nil {
			continue
		}
		st, err := expandStepFor(raw, builtinVars(prof, ""), driverValues(prof), nodes)
		if err != nil {
			continue
		}
		for _, m := range st.Apply.Objects {
			if m.Object["kind"] != "CSIDriver" || m.Object["apiVersion"] != "storage.k8s.io/v1" {
				continue
			}
			meta, _ := m.Object["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			if name == "" || deleted[name] {
				continue
			}
			live, err := objects.get(ctx, ObjectRef{Kind: "csidriver", Name: name}, "")
			if err != nil {
				return "", fmt.Errorf("run scenario %s: read CSIDriver %s: %w", s.Name, name, err)
			}
			if live == nil {
				continue
			}
			if why := immutableChange(m.Object, live); why != "" {
				return fmt.Sprintf("step %d (%s) at %s:%d applies CSIDriver %s with %s; the cluster's CSIDriver, deployed with its driver, cannot be changed so (an immutable field: kube-apiserver refuses it)",
					raw.Index, raw.Name, raw.file(s), raw.Line, name, why), nil
			}
		}
	}
	return "", nil
}

// immutableChange names the immutable fields of CSIDriver manifest want
// that differ from the live object's, with both values; "" if none does.
func immutableChange(want, live map[string]any) string {
	wantSpec, _ := want["spec"].(map[string]any)
	liveSpec, _ := live["spec"].(map[string]any)
	var diffs []string
	for _, field := range []string{"attachRequired", "volumeLifecycleModes"} {
		w, l := withDefault(wantSpec, field), withDefault(liveSpec, field)
		if fmt.Sprint(w) != fmt.Sprint(l) {
			diffs = append(diffs, fmt.Sprintf("spec.%s %v where the cluster's has %v", field, w, l))
		}
	}
	return strings.Join(diffs, " and ")
}

func withDefault(spec map[string]any, field string) any {
	if v, ok := spec[field]; ok && v != nil {
		if l, ok := v.([]any); !ok || len(l) > 0 {
			return v
		}
	}
	return csiDriverDefaults[field]
}

func isCSIDriverKind(kind string) bool {
	switch strings.ToLower(kind) {
	case "csidriver", "csidrivers", "csidriver.storage.k8s.io", "csidrivers.storage.k8s.io":
		return true
	}
	return false
}
