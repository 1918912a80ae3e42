package controller

import (
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// SimulatedHost is the host name the simulated control plane's components
// run on, where a real component embeds its machine's (os.Hostname): in
// the external-provisioner's event source, <driver>_<host>_<uuid>. A fixed
// name, so that a seed gives the same bytes on every machine; csisim diff
// reads it as a host name, as it reads the real machine's.
const SimulatedHost = "csisim"

// Runtime is what a controller takes from the world it runs in, so that the
// same controller runs on goroutines against a real API server and inside
// the deterministic loop of a simulation.
type Runtime struct {
	// Clock is the time controllers stamp and wait on.
	Clock clock.PassiveClock
	// NewQueue makes a work queue with client-go's default backoff.
	NewQueue func(name string) Queue
	// NewQueueWithBackoff makes a work queue whose failed keys are retried
	// after base, doubling up to max: the sidecars' --retry-interval-start
	// and --retry-interval-max.
	NewQueueWithBackoff func(name string, base, max time.Duration) Queue
	// NewEventRecorder makes an event recorder for a component; the
	// function it returns stops the recorder.
	NewEventRecorder func(client kubernetes.Interface, component, host string) (record.EventRecorder, func())
}

// RealRuntime is the runtime of a controller process: real time,
// client-go's queues and its asynchronous event broadcaster.
func RealRuntime() Runtime {
	return Runtime{Clock: clock.RealClock{}, NewQueue: NewQueue, NewQueueWithBackoff: NewQueueWithBackoff, NewEventRecorder: NewEventRecorder}
}
