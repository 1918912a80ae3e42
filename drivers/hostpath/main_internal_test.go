package hostpath

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// mount-utils logs through klog, by default to stderr, where its lines
	// would interleave with benchmark results. What it logs about a failure
	// reaches the driver's errors anyway.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
