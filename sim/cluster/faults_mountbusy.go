package cluster

// mount-busy: a process on the node keeps a pod's mount of one of its
// volumes busy — its working directory or an open file inside it — so that
// the kubelet's unmount of it fails with EBUSY ("target is busy") until the
// holder goes: the subpath clean-up the kubelet does before
// NodeUnpublishVolume (kubernetes pkg/volume/util/subpath/subpath_linux.go,
// doCleanSubPaths), or the driver's own unmount in NodeUnpublishVolume.
// The holder here is an open directory in csisim's own process, on the
// node's real mount (csisim's driver mounts for real); it is let go on
// the virtual clock, and at the latest when the cluster closes, so that
// no run's clean-up finds a mount held.

import (
	"context"
	"fmt"
	"os"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// mountHolders are the open directories that hold mounts busy.
type mountHolders struct {
	mu    sync.Mutex
	held  map[int]*os.File
	count int
}

// hold keeps f until release(id) or closeAll.
func (h *mountHolders) hold(f *os.File) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[int]*os.File{}
	}
	h.count++
	h.held[h.count] = f
	return h.count
}

// release lets go of one holder; false if it was gone already.
func (h *mountHolders) release(id int) (bool, error) {
	h.mu.Lock()
	f, ok := h.held[id]
	delete(h.held, id)
	h.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, f.Close()
}

// closeAll lets go of every holder, as the run ends however it ends.
func (h *mountHolders) closeAll() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first error
	for id, f := range h.held {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("letting go of a mount-busy holder: %w", err)
		}
		delete(h.held, id)
	}
	return first
}

// canHoldMount: the mock driver mounts nothing a process could hold.
func (c *Cluster) canHoldMount(f fault.Fault) error {
	if c.cfg.Mock {
		return fault.Unsupported(f.Kind, backendName+" with the mock driver", "the mock driver mounts nothing, so there is no mount to keep busy")
	}
	if f.Busy.Pod == "" || f.Busy.Volume == "" || f.Busy.For <= 0 {
		return fault.Unsupported(f.Kind, backendName, "it needs a pod, one of its volumes and a duration above 0")
	}
	return nil
}

// holdMount opens the directory where the pod's containers see the volume
// on the pod's node and keeps it open for f.Busy.For of cluster time.
func (c *Cluster) holdMount(ctx context.Context, f fault.Fault) error {
	if err := c.canHoldMount(f); err != nil {
		return err
	}
	ns := f.Namespace
	if ns == "" {
		ns = "default"
	}
	pod, err := c.clients.client("csisim").CoreV1().Pods(ns).Get(ctx, f.Busy.Pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", ns, f.Busy.Pod, err)
	}
	c.nodesMu.Lock()
	parts := c.nodes[pod.Spec.NodeName]
	c.nodesMu.Unlock()
	if parts == nil || parts.kubelet == nil {
		return fmt.Errorf("pod %s/%s is on no node with a kubelet (spec.nodeName %q); wait for it to run first", ns, pod.Name, pod.Spec.NodeName)
	}
	path, subPath, err := parts.kubelet.VolumeMountPath(pod, f.Busy.Volume)
	if err != nil {
		return err
	}
	dir, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("holding volume %q of pod %s/%s busy: %w", f.Busy.Volume, ns, pod.Name, err)
	}
	id := c.busy.hold(dir)
	where := "its publish target"
	if subPath {
		where = "its subPath bind mount"
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: "Pod " + ns + "/" + pod.Name,
		Detail: fmt.Sprintf("a process on node %s holds an open directory in volume %q (%s) for %s: its unmount fails with EBUSY",
			pod.Spec.NodeName, f.Busy.Volume, where, f.Busy.For)})
	c.loop.After(f.Busy.For, func() {
		// A Close that fails leaves nothing open: there is nothing to
		// retry, and the kubelet's next unmount says whether it went.
		if ok, _ := c.busy.release(id); ok {
			c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind) + " ended", Object: "Pod " + ns + "/" + pod.Name,
				Detail: fmt.Sprintf("the process holding volume %q is gone", f.Busy.Volume)})
		}
	})
	return nil
}
