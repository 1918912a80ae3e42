package realcluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realkube/apiproxy"
	"github.com/csisim/csisim/trace"
)

// The API server faults act on the reverse proxy every component reaches
// kube-apiserver through (realkube.Cluster.APIProxy); the harness — the
// scenario's client, the timeline's watches — reaches kube-apiserver past
// it, as the simulator's harness passes fakekube's faults. They last
// their duration in wall time.

// serviceAccountAgent is what ends the user agent of a controller of
// kube-controller-manager, which talks with its own service account's
// token: client-go's AddUserAgent appends the account's user name to the
// binary's user agent (k8s.io/controller-manager pkg/clientbuilder
// client_builder_dynamic.go constructClient).
const serviceAccountAgent = "/system:serviceaccount:kube-system:"

// simulatedName is the name the simulator gives the component whose
// service account is named sa, where the two differ.
var simulatedName = map[string]string{"persistent-volume-binder": "persistentvolume-binder"}

// apiComponent names the component a request to the API proxy comes from
// as the simulator names its components (fault.Components,
// fault.KubeletComponent): kube-controller-manager's controllers by their
// service account (in their user agent; the proxy does not see the
// token's user), kube-scheduler and a real kubelet by their certificate's
// user, the sidecars by the binary their user agent names, a simulated
// kubelet by the name its user agent appends (kubelet:<node>).
func apiComponent(cl apiproxy.Client) string {
	switch {
	case strings.HasPrefix(cl.User, "system:node:"):
		return fault.KubeletComponent(strings.TrimPrefix(cl.User, "system:node:"))
	case cl.User == "system:kube-scheduler":
		return "default-scheduler"
	}
	if i := strings.LastIndex(cl.UserAgent, serviceAccountAgent); i >= 0 {
		sa := cl.UserAgent[i+len(serviceAccountAgent):]
		if name, ok := simulatedName[sa]; ok {
			return name
		}
		return sa
	}
	if name := fakekube.AppendedName(cl.UserAgent); isKubelet(name) {
		return name
	}
	first := apiproxy.FirstWord(cl)
	for component, binary := range realSidecars {
		if binary == first {
			return component
		}
	}
	return first
}

// sharedAccount are the simulated components that, in the real
// kube-controller-manager, talk with another controller's service
// account, so that the proxy cannot tell their requests apart.
var sharedAccount = map[string]string{"taint-eviction-controller": "node-controller"}

// canInjectAPIServer says whether the cluster can inject an API server
// fault: each needs how long it lasts (or, for api-throttle, how many
// requests), and a component it names must be one the proxy can tell.
func (c *Cluster) canInjectAPIServer(f fault.Fault) error {
	if err := fault.CheckAPIServerBounds(f, backendName); err != nil {
		return err
	}
	if f.Component == "" {
		return nil
	}
	if other, ok := sharedAccount[f.Component]; ok {
		return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("the real %s talks with %s's service account, and the API proxy cannot tell the two apart", f.Component, other))
	}
	if node, ok := fault.KubeletNode(f.Component); ok {
		if !slices.Contains(c.cfg.Nodes, node) {
			return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("there is no node %q (nodes: %v)", node, c.cfg.Nodes))
		}
		return nil
	}
	if !slices.Contains(fault.Components, f.Component) {
		return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("there is no component %q (the components: %s, kubelet:NODE)", f.Component, strings.Join(fault.Components, ", ")))
	}
	return nil
}

// injectAPIServerFault injects an API server fault on the proxy and ends
// it after its duration; the fault and its end are FAULT entries in the
// timeline, in the simulator's words.
//
// api-server-down: the proxy's port refuses connections and every open
// connection is closed, watches included; the components' reflectors
// retry with their backoff and, when it is back, list or watch again.
//
// api-slow-writes: each write (but Events) of Component, or of every
// component, reaches kube-apiserver Latency later.
//
// api-throttle: the next Times requests (or all for Duration) of
// Component, or of every component, are answered 429 with Retry-After;
// client-go sleeps that long and retries, up to 10 times.
func (c *Cluster) injectAPIServerFault(f fault.Fault) error {
	if err := c.canInjectAPIServer(f); err != nil {
		return err
	}
	proxy := c.kube.APIProxy()
	begins, ended, throttled := fault.APIServerStory(f)
	entry := trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "kube-apiserver", Detail: begins}
	var end func() error
	switch f.Kind {
	case fault.APIServerDown:
		if proxy.Down() {
			return fmt.Errorf("the API server is already down")
		}
		c.rec.Add(entry)
		if err := proxy.SetDown(true); err != nil {
			return err
		}
		end = func() error { return proxy.SetDown(false) }
	case fault.APISlowWrites:
		c.rec.Add(entry)
		proxy.SlowWrites(f.Component, f.API.Latency)
		end = func() error { proxy.SlowWrites(f.Component, 0); return nil }
	case fault.APIThrottle:
		c.rec.Add(entry)
		proxy.Throttle(f.Component, throttled, f.API.RetryAfter)
		if ended == "" {
			return nil
		}
		end = func() error { proxy.Throttle(f.Component, 0, 0); return nil }
	}
	c.endAfter(f.API.Duration, func() {
		e := trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind) + " ended", Object: "kube-apiserver", Detail: ended}
		if err := end(); err != nil {
			e.Err = err.Error()
		}
		c.rec.Add(e)
	})
	return nil
}

// endAfter ends a fault after d, in wall time, unless the cluster closes
// first. It is called with driverMu held, as InjectFault holds it.
func (c *Cluster) endAfter(d time.Duration, end func()) {
	c.faultTimers = append(c.faultTimers, time.AfterFunc(d, func() {
		c.driverMu.Lock()
		closing := c.closing
		c.driverMu.Unlock()
		if !closing {
			end()
		}
	}))
}
