package scenarios

import (
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/fault"
)

// Limits of the API server faults, checked when a scenario loads.
const (
	// MaxAPIOutage bounds apiServerDown's, apiSlowWrites' and apiThrottle's
	// duration: after an hour without the API every node's lease has long
	// run out and every component has backed off to its longest wait, so
	// a longer outage shows nothing more; "300m" for "300s" is a typo
	// that would run the simulation for hours of cluster time.
	MaxAPIOutage = time.Hour
	// MaxWriteLatency bounds apiSlowWrites' latency: kube-apiserver
	// answers a request that takes longer than its --request-timeout
	// (default 1m0s, k8s.io/apiserver pkg/server/config.go RequestTimeout)
	// with 504 Timeout; a write slower than that is not slow but failed.
	MaxWriteLatency = time.Minute
	// MaxRetryAfter bounds apiThrottle's retryAfter: client-go takes it in
	// whole seconds and retries ten times, so a minute each is ten
	// minutes of one request's retries.
	MaxRetryAfter = time.Minute
	// MaxThrottled bounds apiThrottle's times: each refused request costs
	// its client the Retry-After, and more is a throttle in force, which
	// duration: says.
	MaxThrottled = 1000
)

// defaultRetryAfter is the Retry-After kube-apiserver's throttling sends:
// 1 s (k8s.io/apiserver pkg/server/filters/maxinflight.go retryAfter; the
// priority and fairness filter starts from it too).
const defaultRetryAfter = time.Second

// apiServerFault reads the API server faults:
//
//	apiServerDown: {duration}
//	apiSlowWrites: {latency, duration, component?}
//	apiThrottle:   {times | duration, retryAfter?, component?}
func (p *parser) apiServerFault(kind fault.Kind, n *yaml.Node) *fault.Fault {
	key := FaultStepKey(kind)
	fields, required := []string{"duration"}, []string{"duration"}
	switch kind {
	case fault.APISlowWrites:
		fields, required = append(fields, "latency", "component"), append(required, "latency")
	case fault.APIThrottle:
		fields, required = append(fields, "times", "retryAfter", "component"), nil
	}
	f, ok := p.mapping(n, key, fields...)
	if !ok {
		return nil
	}
	if missing := missingFields(f, required); len(missing) > 0 {
		p.fail(n, "%s needs %s", key, listWords(missing, ""))
		return nil
	}
	if kind == fault.APIThrottle && f.has("times") == f.has("duration") {
		p.fail(n, "%s needs one of times: (how many requests get 429) or duration: (how long every request does)", key)
		return nil
	}
	flt := &fault.Fault{Kind: kind}
	if kind == fault.APIThrottle {
		flt.API.RetryAfter = defaultRetryAfter
	}
	if f.has("duration") {
		flt.API.Duration, ok = p.boundedDuration(f.vals["duration"], "duration", MaxAPIOutage)
	}
	if ok && f.has("latency") {
		flt.API.Latency, ok = p.boundedDuration(f.vals["latency"], "latency", MaxWriteLatency)
	}
	if ok && f.has("retryAfter") {
		flt.API.RetryAfter, ok = p.boundedDuration(f.vals["retryAfter"], "retryAfter", MaxRetryAfter)
		if ok && flt.API.RetryAfter%time.Second != 0 {
			p.fail(f.vals["retryAfter"], "retryAfter must be whole seconds (the Retry-After header carries seconds), not %s", flt.API.RetryAfter)
			ok = false
		}
	}
	if ok && f.has("times") {
		flt.Times, ok = p.timesAnd(ok, f.vals["times"], false)
		if ok && flt.Times > MaxThrottled {
			p.fail(f.vals["times"], "times must be at most %d for %s, not %d: throttle for a duration: instead", MaxThrottled, key, flt.Times)
			ok = false
		}
	}
	if ok && f.has("component") {
		flt.Component, ok = p.component(f.vals["component"])
	}
	if !ok {
		return nil
	}
	return flt
}

// boundedDuration reads a duration above 0 and at most limit.
func (p *parser) boundedDuration(n *yaml.Node, field string, limit time.Duration) (time.Duration, bool) {
	d, ok := p.duration(n, field)
	if ok && d > limit {
		p.fail(n, "%s must be at most %s, not %s", field, limit, d)
		return 0, false
	}
	return d, ok
}
