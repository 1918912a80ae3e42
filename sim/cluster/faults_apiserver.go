package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/trace"
)

// apiServerActor is the object of the API server faults' timeline entries.
const apiServerActor = "kube-apiserver"

// canInjectAPIServer says whether the simulator can inject
// api-server-down, api-slow-writes or api-throttle: each needs how long
// it lasts (or, for api-throttle, how many requests), and a component it
// names must be one the simulator runs.
func (c *Cluster) canInjectAPIServer(f fault.Fault) error {
	if err := fault.CheckAPIServerBounds(f, backendName); err != nil {
		return err
	}
	if f.Component == "" {
		return nil
	}
	if slices.Contains(c.cfg.Without, f.Component) {
		return fault.Unsupported(f.Kind, backendName,
			fmt.Sprintf("%s is left out of the simulation and replaced by a real process; name no component to disturb every client, that one included", f.Component))
	}
	if known := c.apiComponents(true); !slices.Contains(known, f.Component) {
		return fault.Unsupported(f.Kind, backendName,
			fmt.Sprintf("there is no component %q (the simulated ones: %s)", f.Component, strings.Join(known, ", ")))
	}
	return nil
}

// injectAPIServerFault injects an API server fault; the fault and its end
// are FAULT entries in the timeline.
//
// api-server-down: every component's requests are refused as a stopped
// kube-apiserver's connections are, and every informer's watch ends
// (fakekube.Server.SetDown, loop.APIDown); after Duration the server is
// back, and each reflector, which kept trying with its backoff, lists
// again (a relist entry each). The scenario's own client observes past the
// outage, as a harness does on a real cluster.
//
// api-slow-writes: each write (but Events) of Component, or of every
// component, is applied Latency later, on the virtual clock, for Duration.
//
// api-throttle: the next Times requests (or all for Duration) of
// Component, or of every component, get 429 with Retry-After; client-go
// waits that long (on the virtual clock) and retries, up to 10 times,
// before its caller sees the error. Each refused write is an API entry.
func (c *Cluster) injectAPIServerFault(_ context.Context, f fault.Fault) error {
	if err := c.canInjectAPIServer(f); err != nil {
		return err
	}
	begins, ends, throttled := fault.APIServerStory(f)
	entry := trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: apiServerActor, Detail: begins}
	ended := func() {
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind) + " ended", Object: apiServerActor, Detail: ends})
	}
	switch f.Kind {
	case fault.APIServerDown:
		if c.api.Down() {
			return fmt.Errorf("the API server is already down")
		}
		c.rec.Add(entry)
		c.api.SetDown(true)
		// A reflector whose list missed nothing and changed nothing told
		// its handlers nothing: its entry would only be noise.
		c.loop.APIDown(func(r loop.Relist) {
			if r.Missed > 0 || len(r.Updated)+len(r.Added)+len(r.Deleted) > 0 {
				c.rec.Add(describeRelist(r))
			}
		})
		c.loop.After(f.API.Duration, func() { c.api.SetDown(false); ended() })
	case fault.APISlowWrites:
		c.rec.Add(entry)
		c.api.SlowWrites(f.Component, f.API.Latency)
		c.loop.After(f.API.Duration, func() { c.api.SlowWrites(f.Component, 0); ended() })
	case fault.APIThrottle:
		c.rec.Add(entry)
		c.api.Throttle(f.Component, throttled, f.API.RetryAfter)
		if ends != "" {
			c.loop.After(f.API.Duration, func() { c.api.Throttle(f.Component, 0, 0); ended() })
		}
	default:
		return fault.Unsupported(f.Kind, backendName, "it is not an API server fault")
	}
	return nil
}
