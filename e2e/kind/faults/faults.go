// Package faults injects csisim's faults (package fault) into a kind
// cluster with the driver deployed from deploy/kubernetes: the e2e suite's
// backend implements fault.Injector with a Kind. Each fault is first
// planned — Plan is a pure function from the fault to the Actions (docker
// and kubectl commands, client-go calls) that inject it, so the mapping
// can be tested and shown without a cluster — then executed:
//
//	k := faults.NewKind(faults.KindConfig{Cluster: "csisim-e2e", Kubeconfig: kc}, client)
//	err := k.InjectFault(ctx, fault.Fault{Kind: fault.NodeLoss, Node: "csisim-e2e-worker"})
//
// Faults on kind (the nodes are kind's: <cluster>-worker, <cluster>-worker2, ...):
//
//	node-loss                   docker kill <node>: the machine dies, mounts and attachments stay
//	node-return                 docker start <node>; wait for the node to be Ready
//	out-of-service              taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
//	kubelet-restart             systemctl restart kubelet in <node>
//	stale-volumeattachment      create the claim's VolumeAttachment on <node> by hand
//	controller-manager-restart  stop the kube-controller-manager container; the kubelet
//	                            of the control-plane node starts its static pod again
//	driver-restart state: keep  SIGKILL the node plugin's driver container (the kubelet
//	                            restarts it in place), or force-delete the controller pod
//	                            (its Deployment makes a new one)
//
// Every other fault is refused by CanInject with the reason (a
// *fault.UnsupportedError): the CSI faults need drivers/faultproxy between
// the callers and the driver, which the kind deployment does not have; a
// crashed driver stays down only until its kubelet restarts it; the mount
// propagation of the node DaemonSet is the same on every node.
package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/fault"
)

// backendName names kind in the faults it refuses.
const backendName = "kind"

// CanInject returns nil if k can inject f, or why not: the error of Plan.
func (k *Kind) CanInject(f fault.Fault) error {
	_, err := k.Plan(f)
	return err
}

// InjectFault plans f and executes the plan, noting what it leaves
// changed for UndoFaults.
func (k *Kind) InjectFault(ctx context.Context, f fault.Fault) error {
	actions, err := k.Plan(f)
	if err != nil {
		return err
	}
	if err := k.Execute(ctx, actions); err != nil {
		return fmt.Errorf("fault %s: %w", f.Describe(), err)
	}
	k.lasting.note(f)
	return nil
}

// UndoFaults puts back what the faults injected since the last call left
// changed, for the next scenario on the same cluster: a node lost and not
// returned is started again and waited for (node-return's actions), and an
// out-of-service taint is taken off, as an administrator does once the
// node is back. What the other faults do is over by itself (a restarted
// kubelet, controller or plugin) or is an object of the scenario's, which
// goes with its namespace or is put back by the runner (Runner.Restore).
func (k *Kind) UndoFaults(ctx context.Context) error {
	down, outOfService := k.lasting.take()
	var actions []Action
	for _, n := range down {
		actions = append(actions, k.docker("start", n), WaitNodeReady{Node: n, Status: corev1.ConditionTrue, Timeout: NodeReturnTimeout})
	}
	for _, n := range outOfService {
		actions = append(actions, UntaintNode{Node: n, Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute})
	}
	if err := k.Execute(ctx, actions); err != nil {
		return fmt.Errorf("undo the faults: %w", err)
	}
	return nil
}

// lasting is what the faults injected so far leave changed after a run:
// nodes down, nodes tainted out-of-service, in the order they were.
type lasting struct {
	mu                 sync.Mutex
	down, outOfService []string
}

func (l *lasting) note(f fault.Fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch f.Kind {
	case fault.NodeLoss:
		if !slices.Contains(l.down, f.Node) {
			l.down = append(l.down, f.Node)
		}
	case fault.NodeReturn:
		l.down = slices.DeleteFunc(l.down, func(n string) bool { return n == f.Node })
	case fault.OutOfService:
		if !slices.Contains(l.outOfService, f.Node) {
			l.outOfService = append(l.outOfService, f.Node)
		}
	}
}

func (l *lasting) take() (down, outOfService []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	down, outOfService = l.down, l.outOfService
	l.down, l.outOfService = nil, nil
	return down, outOfService
}

var _ fault.Injector = (*Kind)(nil)
