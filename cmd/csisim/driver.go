package main

import (
	"io"

	"github.com/csisim/csisim/drivers/hostpath"
)

// driverMain runs csisim's own CSI driver; the simulator starts it this way
// as a separate process, and so can any CSI tool.
func driverMain(args []string, stdout, stderr io.Writer) int {
	return hostpath.Main(args, stdout, stderr)
}
