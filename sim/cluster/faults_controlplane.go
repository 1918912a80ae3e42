package cluster

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	scenario "github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/trace"
)

// staleVolumeAttachment creates, as the scenario and not as the
// attach/detach controller, the VolumeAttachment the controller would make
// for the claim's volume on the node: what a controller that lost track of
// an attachment leaves behind. The external-attacher attaches it; the
// running attach/detach controller does not know it, as the real one
// learns attachments only from its own operations and when it starts.
func (c *Cluster) staleVolumeAttachment(ctx context.Context, f scenario.Fault) error {
	ns := f.Namespace
	if ns == "" {
		ns = "default"
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	claim, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, f.Claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("claim %s/%s: %w", ns, f.Claim, err)
	}
	if claim.Spec.VolumeName == "" {
		return fmt.Errorf("claim %s/%s is not bound to a volume yet; wait for it first", ns, f.Claim)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("volume of claim %s/%s: %w", ns, f.Claim, err)
	}
	if pv.Spec.CSI == nil {
		return fmt.Errorf("volume %s of claim %s/%s is not a CSI volume", pv.Name, ns, f.Claim)
	}
	name := attachdetach.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, f.Node)
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: f.Type, Object: "VolumeAttachment " + name})
	pvName := pv.Name
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: pv.Spec.CSI.Driver, NodeName: f.Node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
	}
	if _, err := cs.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VolumeAttachment %s: %w", name, err)
	}
	return nil
}

// restartControllerManager restarts the simulated kube-controller-manager's
// controllers that keep state in memory: the attach/detach controller
// rebuilds its actual state of the world from the API; the node lifecycle
// controller registers the nodes again and the pod garbage collector
// starts its quarantine of missing nodes over.
func (c *Cluster) restartControllerManager() error {
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: scenario.FaultControllerManagerRestart, Object: "kube-controller-manager"})
	if c.attachDetach == nil && c.nodeLifecycle == nil {
		return fmt.Errorf("kube-controller-manager's controllers are not simulated here (left out: %v)", c.cfg.Without)
	}
	if c.attachDetach != nil {
		c.attachDetach.Restart()
	}
	if c.nodeLifecycle != nil {
		c.nodeLifecycle.Restart()
	}
	return nil
}
