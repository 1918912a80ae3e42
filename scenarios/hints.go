package scenarios

import (
	"context"
	"strings"
)

// HintSource is implemented by backends that can tell what in their
// set-up may keep a wait from ever holding (the simulator: a claim whose
// StorageClass names a provisioner no driver of the run serves, a volume
// pinned to a node that does not exist). The runner adds the hints to a
// timed-out wait's message; they are no failure of their own.
type HintSource interface {
	Hints(ctx context.Context) []string
}

// hints renders the backend's hints for a timed-out wait's message: one
// "hint:" line each, or "".
func (ex *executor) hints(ctx context.Context) string {
	hs, ok := ex.runner.Backend.(HintSource)
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, h := range hs.Hints(ctx) {
		b.WriteString("\nhint: " + h)
	}
	return b.String()
}
