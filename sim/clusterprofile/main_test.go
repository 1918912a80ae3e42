package clusterprofile

import (
	"fmt"
	"os"
	"testing"

	"github.com/csisim/csisim/drivers/hostpath"
)

// TestMain lets the test binary stand in for a third-party driver: with
// CSISIM_TEST_DRIVER=1 in its environment (a profile's command env) it is
// csisim's driver, `csisim driver` and the flags after it.
func TestMain(m *testing.M) {
	if os.Getenv("CSISIM_TEST_DRIVER") == "1" {
		args := os.Args[1:]
		if len(args) == 0 || args[0] != "driver" {
			fmt.Fprintf(os.Stderr, "test driver: want subcommand \"driver\", got %q\n", args)
			os.Exit(2)
		}
		os.Exit(hostpath.Main(args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
