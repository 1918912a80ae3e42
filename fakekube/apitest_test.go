package fakekube

import (
	"testing"

	"github.com/csisim/csisim/fakekube/apitest"
)

// TestAPISemantics runs the portable semantic checks against fakekube,
// in-process and over HTTP; realkube runs the same checks against a real
// kube-apiserver.
func TestAPISemantics(t *testing.T) {
	t.Run("in-process", func(t *testing.T) {
		apitest.Run(t, apitest.Target{Config: New(Options{}).RESTConfig("apitest"), SnapshotCRDs: true})
	})
	t.Run("http", func(t *testing.T) {
		apitest.Run(t, apitest.Target{Config: serveHTTP(t, New(Options{})), SnapshotCRDs: true})
	})
}
