// Package faults turns the fault names of csisim's scenarios into concrete
// actions on a cluster, starting with a kind cluster (Kind).
//
// A Fault is a name plus parameters; an Executor first plans it — Plan is a
// pure function from the fault to the list of Actions (docker and kubectl
// commands, client-go calls) it takes, so that the mapping can be tested and
// shown without a cluster — and then executes the plan:
//
//	k := faults.NewKind(faults.KindConfig{Cluster: "csisim-e2e", Kubeconfig: kc, DeployDir: "deploy/kubernetes"}, client)
//	err := faults.Inject(ctx, k, faults.Fault{Name: faults.NodeLoss, Params: map[string]string{"node": "csisim-e2e-worker"}})
//
// Faults on kind (parameters in brackets are optional):
//
//	node-loss node [method=stop|kill]      docker stop (or kill) <node>
//	node-return node [timeout]             docker start <node>; wait for node Ready
//	out-of-service node                    taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
//	clear-out-of-service node              remove that taint
//	stale-volumeattachment node pv         create a VolumeAttachment for pv on node by hand
//	    [volumeHandle] [name]              (node may be one that is gone)
//	stale-volumeattachment mode=orphan     docker stop <node>, then force-delete the pod that
//	    node pod [namespace]               used the volume there: its VolumeAttachment stays
//	missing-mount-propagation [timeout]    kubectl apply the node DaemonSet variant without
//	                                       Bidirectional propagation; wait for the rollout
//	restore-mount-propagation [timeout]    kubectl apply the regular node DaemonSet; wait
//	driver-crash node [method=delete-pod|kill-container]
//	                                       force-delete the node plugin pod on node, or
//	                                       SIGKILL its driver container (crictl stop -t 0)
//	driver-crash component=controller      force-delete the controller pod
//	grpc-error                             unsupported on kind (ErrUnsupported)
//
// # How the scenario runner will use it
//
// The scenario DSL has no fault step yet. When it gets one, e.g.
//
//	steps:
//	  - fault: {name: node-loss, node: csisim-e2e-worker}
//
// the parser keeps the name and the remaining fields as Fault.Params (as
// strings, after ${var} expansion), and the runner hands the Fault to its
// Backend if that implements an injector interface such as
//
//	type FaultInjector interface {
//		InjectFault(ctx context.Context, f faults.Fault) error
//	}
//
// which the kind backend implements with Inject(ctx, kind, f), and the
// simulator with its own in-process faults. As with csiCalls, a scenario
// that needs a fault its backend cannot inject should be rejected before it
// starts: the runner can call Plan up front and look for ErrUnsupported.
// This package depends on nothing in scenarios/, so the DSL can grow
// without touching it.
package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Fault names, as scenarios spell them.
const (
	// NodeLoss: the node stops; kubelet stops posting status, the node
	// becomes NotReady/Unknown, its pods and mounts are stuck there.
	NodeLoss = "node-loss"
	// NodeReturn: a lost node comes back.
	NodeReturn = "node-return"
	// OutOfService: an operator marks a shut-down node out of service, so
	// that its pods are deleted and its volumes force-detached.
	OutOfService = "out-of-service"
	// ClearOutOfService removes the out-of-service taint again.
	ClearOutOfService = "clear-out-of-service"
	// StaleVolumeAttachment: a VolumeAttachment that names a node which
	// no longer uses the volume (or no longer exists).
	StaleVolumeAttachment = "stale-volumeattachment"
	// MissingMountPropagation: the node plugin runs without Bidirectional
	// mount propagation, so its mounts never reach kubelet and the pods.
	MissingMountPropagation = "missing-mount-propagation"
	// RestoreMountPropagation undoes MissingMountPropagation.
	RestoreMountPropagation = "restore-mount-propagation"
	// DriverCrash: the CSI driver process dies and is restarted.
	DriverCrash = "driver-crash"
	// GRPCError: the driver answers a CSI call with an injected gRPC
	// error; needs drivers/faultproxy in front of the driver.
	GRPCError = "grpc-error"
)

// Parameter names.
const (
	ParamNode         = "node"         // a Kubernetes node name
	ParamMethod       = "method"       // how, where a fault can happen in several ways
	ParamMode         = "mode"         // stale-volumeattachment: create (default) or orphan
	ParamTimeout      = "timeout"      // a Go duration: how long to wait for the fault to take effect
	ParamPV           = "pv"           // a PersistentVolume name
	ParamVolumeHandle = "volumeHandle" // the PV's spec.csi.volumeHandle
	ParamName         = "name"         // the name of an object the fault creates
	ParamPod          = "pod"          // a pod name
	ParamNamespace    = "namespace"    // the pod's namespace; default "default"
	ParamComponent    = "component"    // driver-crash: node (default) or controller
)

// Fault is one fault to inject: a name (one of the constants above) and its
// parameters. It is deliberately plain data, independent of the scenario
// package, so that any step format can produce it.
type Fault struct {
	Name   string
	Params map[string]string
}

// String renders the fault as `name key=value ...`, keys sorted.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Name)
	for _, k := range slices.Sorted(maps.Keys(f.Params)) {
		fmt.Fprintf(&b, " %s=%s", k, f.Params[k])
	}
	return b.String()
}

// Names are all fault names this package knows, sorted.
func Names() []string {
	names := []string{NodeLoss, NodeReturn, OutOfService, ClearOutOfService, StaleVolumeAttachment,
		MissingMountPropagation, RestoreMountPropagation, DriverCrash, GRPCError}
	slices.Sort(names)
	return names
}

// Executor injects faults into one kind of cluster.
type Executor interface {
	// Plan returns the actions that inject f, in order, without touching
	// the cluster: the same fault always yields the same actions. An
	// unknown fault or a bad parameter is an error; so is a fault the
	// backend cannot inject, as an error matching ErrUnsupported.
	Plan(f Fault) ([]Action, error)
	// Execute performs actions in order and stops at the first that
	// fails, returning an error that names it.
	Execute(ctx context.Context, actions []Action) error
}

// Inject plans f on e and executes the plan.
func Inject(ctx context.Context, e Executor, f Fault) error {
	actions, err := e.Plan(f)
	if err != nil {
		return err
	}
	if err := e.Execute(ctx, actions); err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	return nil
}

// ErrUnsupported matches (errors.Is) the error of a fault that the backend
// cannot inject at all.
var ErrUnsupported = errors.New("fault not supported by this backend")

// UnsupportedError says which fault a backend cannot inject and why.
type UnsupportedError struct {
	Fault   string
	Backend string
	Reason  string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("fault %s is unsupported on %s: %s", e.Fault, e.Backend, e.Reason)
}

// Is makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }
