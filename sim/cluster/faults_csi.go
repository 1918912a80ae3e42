package cluster

import (
	"context"

	"github.com/csisim/csisim/fault"
)

// Placeholder until the lead's CSI and driver faults are merged.

func (c *Cluster) canInjectCSI(f fault.Fault) error {
	return fault.Unsupported(f.Kind, backendName, "not implemented yet")
}

func (c *Cluster) injectCSIFault(_ context.Context, f fault.Fault) error {
	return fault.Unsupported(f.Kind, backendName, "not implemented yet")
}

func (c *Cluster) injectDriverFault(_ context.Context, f fault.Fault) error {
	return fault.Unsupported(f.Kind, backendName, "not implemented yet")
}
