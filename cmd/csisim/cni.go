package main

import (
	"io"
	"os"

	"github.com/csisim/csisim/realnodes"
)

// cniPlugin is `csisim cni`: the CNI plugin of real nodes, which
// containerd runs (through a wrapper script in the node's CNI bin
// directory) to give each pod sandbox its network. It speaks the CNI
// protocol: CNI_* environment and the network configuration on stdin, the
// result or error as JSON on stdout.
func cniPlugin(stdin io.Reader, stdout io.Writer) int {
	if err := realnodes.CNI(os.Getenv, stdin, stdout); err != nil {
		return 1
	}
	return 0
}
