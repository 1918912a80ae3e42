// Package driversuite_test is what a CSI driver repository's test suite
// looks like with csisim: a Ginkgo suite that starts a simulated cluster
// with the driver for each spec (csisimtest.Start), and checks what the
// driver does through the whole volume lifecycle — provisioning, mounting,
// a fault and its recovery, deletion — on virtual time, so the suite runs
// in seconds and in parallel (ginkgo -p).
//
// It runs kubernetes-csi/csi-test's mock driver, a real third-party driver
// binary; a driver repository points Driver at its own profile file.
package driversuite_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/csisim/csisim/csisimtest"
)

func TestDriverSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Driver suite (csisimtest)")
}

// The first process builds the driver (once, into the user's cache);
// the others start when it is there.
var _ = SynchronizedBeforeSuite(func(ctx context.Context) {
	Expect(csisimtest.Prepare(ctx, driver)).To(Succeed())
}, func() {})
