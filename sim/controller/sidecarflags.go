package controller

import "time"

// SidecarFlags are what a sidecar takes from its container's flags in the
// driver's own manifests (csisim run --deploy: the cluster reads them
// from drivers/manifests), where csisim models the setting. The zero value
// of each field is the real sidecar's default, which each sidecar package
// fills in.
type SidecarFlags struct {
	// Timeout is --timeout, the bound of each CSI call (the
	// external-resizer: --resize-timeout, or --timeout set explicitly).
	Timeout time.Duration
	// ModifyTimeout is the external-resizer's --modify-timeout (or its
	// --timeout set explicitly).
	ModifyTimeout time.Duration
	// RetryIntervalStart and RetryIntervalMax are the backoff of failed
	// syncs: --retry-interval-start, --retry-interval-max.
	RetryIntervalStart, RetryIntervalMax time.Duration
	// ExtraCreateMetadata is the external-provisioner's
	// --extra-create-metadata.
	ExtraCreateMetadata bool
	// DefaultFSType is the external-provisioner's --default-fstype.
	DefaultFSType string
}

// Or is d unless it is zero, then def: a flag's value or the sidecar's
// default.
func Or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
