package cluster

import (
	"fmt"

	"github.com/csisim/csisim/drivers/endpoint"
)

// checkSocket refuses a plugin socket path a unix socket cannot have,
// before a driver is started on it: the scenario parser checks node names
// against a typical run root, this checks against the actual one.
func checkSocket(node, socket string) error {
	if len(socket) <= endpoint.MaxSocketPath {
		return nil
	}
	what := "the controller plugin's socket"
	if node != "" {
		what = fmt.Sprintf("node %q's plugin socket", node)
	}
	return fmt.Errorf("%s %s is %d bytes long, over the %d a unix socket path can have: use a shorter node name (or TMPDIR)",
		what, socket, len(socket), endpoint.MaxSocketPath)
}
