package cluster

import (
	"context"

	"github.com/csisim/csisim/fault"
)

// Placeholder until helper apifaults's API faults are merged.

func (c *Cluster) canInjectAPI(f fault.Fault) error {
	return fault.Unsupported(f.Kind, backendName, "not implemented yet")
}

func (c *Cluster) injectAPIFault(_ context.Context, f fault.Fault) error {
	return fault.Unsupported(f.Kind, backendName, "not implemented yet")
}
