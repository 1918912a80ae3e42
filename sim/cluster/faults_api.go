package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/trace"
)

// conflictDiverges names the simulated components whose writes where a
// real 409 can happen differ from the real component's, and how: a 409
// storm on them would show the simulation's writes, not the real
// behaviour, so api-conflict refuses them.
var conflictDiverges = map[string]string{
	"default-scheduler": "it updates a pod's PodScheduled condition with its resourceVersion where kube-scheduler patches the status without one",
	"kubelet":           "it updates pod and node status with their resourceVersion where the kubelet patches them without one (status manager, node status)",
}

// writersWithoutInformers are clients of the simulated control plane that
// write but have no informers of their own: the node lifecycle
// controller's helpers, which share its informers.
var writersWithoutInformers = []string{"taint-eviction-controller", "pod-garbage-collector"}

// canInjectAPI says whether the simulator can inject an API-layer fault:
// the component must be one it simulates (a control-plane component, or a
// node's kubelet as kubelet:<node>), not one left out for a real process,
// and for watch-drop it must have an informer of the resource.
func (c *Cluster) canInjectAPI(f fault.Fault) error {
	if f.Kind != fault.APIConflict && f.Kind != fault.WatchDrop {
		return fault.Unsupported(f.Kind, backendName, "it is not an API-layer fault")
	}
	if f.Times < 1 {
		return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("times must be at least 1, not %d", f.Times))
	}
	if slices.Contains(c.cfg.Without, f.Component) {
		return fault.Unsupported(f.Kind, backendName,
			fmt.Sprintf("%s is left out of the simulation and replaced by a real process, whose API traffic the simulator does not disturb", f.Component))
	}
	known := c.apiComponents(f.Kind == fault.APIConflict)
	if !slices.Contains(known, f.Component) {
		return fault.Unsupported(f.Kind, backendName,
			fmt.Sprintf("there is no component %q (the simulated ones: %s)", f.Component, strings.Join(known, ", ")))
	}
	if f.Kind == fault.APIConflict {
		name := f.Component
		if _, ok := fault.KubeletNode(name); ok {
			name = "kubelet"
		}
		if why, ok := conflictDiverges[name]; ok {
			return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("csisim's %s does not write as the real one where a conflict can occur: %s", f.Component, why))
		}
	}
	if f.Kind == fault.WatchDrop {
		resources := c.loop.InformerResources(f.Component)
		if !slices.Contains(resources, f.Resource) {
			return fault.Unsupported(f.Kind, backendName,
				fmt.Sprintf("%s has no informer of %q (its informers: %s)", f.Component, f.Resource, strings.Join(resources, ", ")))
		}
	}
	return nil
}

// apiComponents are the simulated components by user agent: those with
// informers, and with writers also the clients that only write.
func (c *Cluster) apiComponents(writers bool) []string {
	var out []string
	for _, name := range Components {
		if s := spec(name); !slices.Contains(c.cfg.Without, name) && (s == nil || s.optIn == nil || s.optIn(c.cfg)) {
			out = append(out, name)
		}
	}
	if writers && !slices.Contains(c.cfg.Without, "node-controller") {
		out = append(out, writersWithoutInformers...)
	}
	for _, node := range c.cfg.Nodes {
		out = append(out, fault.KubeletComponent(node))
	}
	return out
}

// injectAPIFault injects api-conflict or watch-drop; each is a FAULT entry
// in the timeline, and so are the relists that end a watch-drop.
//
// api-conflict: the component's next Times writes that carry a
// resourceVersion (updates, status updates, patches that set it) get 409
// Conflict with the API server's "the object has been modified" message,
// as when another writer changed the object since the component read it
// (fakekube.Server.RefuseConflicting: creates, deletes and patches without
// a resourceVersion cannot meet a conflict on a real server and pass).
// Each refused write is an API entry with its error.
//
// watch-drop: the component's informer of Resource loses its next Times
// events; then its watch ends with 410 Gone and the reflector, after its
// backoff, lists and replaces its cache, its handlers told of what changed
// (loop.DropWatchEvents).
func (c *Cluster) injectAPIFault(ctx context.Context, f fault.Fault) error {
	if err := c.canInjectAPI(f); err != nil {
		return err
	}
	entry := trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: f.Component}
	switch f.Kind {
	case fault.APIConflict:
		entry.Detail = fmt.Sprintf("its next %d writes with a resourceVersion get 409 Conflict", f.Times)
		c.rec.Add(entry)
		c.api.RefuseConflicting(f.Component, f.Times)
		return nil
	case fault.WatchDrop:
		entry.Object += " " + f.Resource
		entry.Detail = fmt.Sprintf("its watch loses the next %d events, then ends with 410 Gone; the reflector relists after its backoff", f.Times)
		c.rec.Add(entry)
		return c.loop.DropWatchEvents(f.Component, f.Resource, f.Times, func(r loop.Relist) { c.rec.Add(describeRelist(r)) })
	}
	return fault.Unsupported(f.Kind, backendName, "it is not an API-layer fault")
}

// describeRelist is the timeline entry of a reflector's list after a
// watch-drop: how many events it missed and what the handlers were told.
func describeRelist(r loop.Relist) trace.Entry {
	details := []string{fmt.Sprintf("after %s of backoff; %d events missed", r.Delay.Round(1e6), r.Missed)}
	for _, part := range []struct {
		what string
		keys []string
	}{{"updated", r.Updated}, {"added", r.Added}, {"deleted (tombstones)", r.Deleted}} {
		if len(part.keys) > 0 {
			details = append(details, fmt.Sprintf("%s [%s]", part.what, strings.Join(part.keys, ",")))
		}
	}
	return trace.Entry{Kind: trace.Fault, Actor: r.Component, Verb: "relist", Object: r.Resource, Detail: strings.Join(details, "; ")}
}

// describeRefused is the timeline entry of a write refused by api-conflict
// or api-throttle: the write, with its status ("409 Conflict", "429
// TooManyRequests") and the error the component got.
func describeRefused(w fakekube.Write, err error) trace.Entry {
	e := DescribeWrite(w)
	if st, ok := err.(apierrors.APIStatus); ok {
		e.Detail = fmt.Sprintf("%d %s", st.Status().Code, st.Status().Reason)
	}
	e.Err = err.Error()
	return e
}
