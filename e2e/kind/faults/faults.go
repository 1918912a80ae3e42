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

	"github.com/csisim/csisim/fault"
)

// backendName names kind in the faults it refuses.
const backendName = "kind"

// CanInject returns nil if k can inject f, or why not: the error of Plan.
func (k *Kind) CanInject(f fault.Fault) error {
	_, err := k.Plan(f)
	return err
}

// InjectFault plans f and executes the plan.
func (k *Kind) InjectFault(ctx context.Context, f fault.Fault) error {
	actions, err := k.Plan(f)
	if err != nil {
		return err
	}
	if err := k.Execute(ctx, actions); err != nil {
		return fmt.Errorf("fault %s: %w", f.Describe(), err)
	}
	return nil
}

var _ fault.Injector = (*Kind)(nil)
