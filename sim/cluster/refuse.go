package cluster

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csisim/csisim/sim/unmodelled"
)

// refusals is the API server's own admission step for this cluster: what
// the simulated components do not act on is refused (package unmodelled),
// with two exceptions of the cluster's own.
//   - The driver's deployment (--deploy) is applied as its manifests say,
//     and so are the objects its controllers make from it (ReplicaSets,
//     pods, revisions): what of it csisim honours and what it does not is
//     said at the start (DeployNotApplied, manifests.Report), not refused
//     — its node plugin's hostPath volumes and Bidirectional mounts are
//     what every driver deployment has.
//   - A DaemonSet is acted on when the cluster runs the DaemonSet
//     controller (Config.DaemonSets).
type refusals struct {
	daemonSets bool

	mu        sync.Mutex
	deploying bool               // the deployment's manifests are being applied
	deployed  map[types.UID]bool // objects of the deployment, and those made from them
}

// check is the fakekube.RefuseFunc.
func (r *refusals) check(gvk schema.GroupVersionKind, obj, old runtime.Object) field.ErrorList {
	if r.ofDeployment(obj) {
		return nil
	}
	errs := unmodelled.CheckObject(gvk, obj, old)
	if gvk.GroupKind() == daemonSetKind && !r.daemonSets {
		// The check judges the kinds fakekube serves by their fields; this
		// one it serves for the DaemonSet controller, which may not run.
		errs = append(errs, unmodelled.Errors(map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind}, nil)...)
	}
	return r.dropKindOf(gvk.GroupKind(), errs)
}

var daemonSetKind = schema.GroupKind{Group: appsv1.GroupName, Kind: "DaemonSet"}

// dropKind is dropKindOf for a manifest a scenario applies.
func (r *refusals) dropKind(obj map[string]any, errs field.ErrorList) field.ErrorList {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return errs
	}
	return r.dropKindOf(gv.WithKind(kind).GroupKind(), errs)
}

// dropKindOf leaves out the refusal of the DaemonSet kind when the
// cluster runs the DaemonSet controller.
func (r *refusals) dropKindOf(gk schema.GroupKind, errs field.ErrorList) field.ErrorList {
	if !r.daemonSets || gk != daemonSetKind {
		return errs
	}
	var kept field.ErrorList
	for _, e := range errs {
		if e.Field != "kind" {
			kept = append(kept, e)
		}
	}
	return kept
}

// ofDeployment says whether obj is one of the deployment's objects, or
// controlled by one (and then remembers it too, for what it makes).
func (r *refusals) ofDeployment(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deploying || r.deployed[m.GetUID()] {
		r.remember(m.GetUID())
		return true
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && r.deployed[ref.UID] {
		r.remember(m.GetUID())
		return true
	}
	return false
}

func (r *refusals) remember(uid types.UID) {
	if uid == "" {
		return
	}
	if r.deployed == nil {
		r.deployed = map[types.UID]bool{}
	}
	r.deployed[uid] = true
}

// applying marks the deployment's own writes while f applies them.
func (r *refusals) applying(f func() error) error {
	r.mu.Lock()
	r.deploying = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.deploying = false
		r.mu.Unlock()
	}()
	return f()
}
