package kubelet

// The kubelet as a process: a restart (Restart) ends one and starts the
// next in the same Kubelet value, as a real kubelet restarted by its
// service manager is a new process on the same node. What the old process
// had asked its drivers dies with it: a CSI call it had in flight is cut
// off — the driver may still finish the work, but no one hears the answer,
// and nothing the old process was doing goes on.

import (
	"context"
	"fmt"

	"github.com/csisim/csisim/sim/csiclient"
)

// ProcessID names the kubelet's current process to the fault proxies in
// front of its node plugins (faultproxy.CallerHeader): its node and run.
func (k *Kubelet) ProcessID() string {
	return processID(k.cfg.NodeName, k.runs.Load())
}

func processID(node string, run int64) string {
	return fmt.Sprintf("kubelet:%s#%d", node, run)
}

// csiCallContext is the context of one CSI call of the current process:
// bounded by the kubelet's CSI timeout, and cut off once the process has
// ended (csiclient.WithProcess).
func (k *Kubelet) csiCallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	run := k.runs.Load()
	ctx = csiclient.WithProcess(ctx, processID(k.cfg.NodeName, run), func() bool { return k.runs.Load() == run })
	return csiclient.WithTimeout(ctx, k.cfg.Timeout)
}
