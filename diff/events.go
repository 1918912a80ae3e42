package diff

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// events adds the events about each object to it, by reason: their
// messages, who reported them and how often. Objects that are gone get an
// entry of their own that only has events.
func (n *Normaliser) events(objects map[string]Object, events []corev1.Event) {
	type acc struct {
		messages, sources map[string]bool
		count             int32
	}
	byObject := map[string]map[string]*acc{} // object key -> reason -> what its events say
	for _, e := range events {
		key, ok := n.eventObject(e)
		if !ok {
			continue
		}
		if byObject[key] == nil {
			byObject[key] = map[string]*acc{}
			if _, ok := objects[key]; !ok {
				kind, name, _ := strings.Cut(key, " ")
				objects[key] = Object{Kind: kind, Name: name}
			}
		}
		a := byObject[key][e.Reason]
		if a == nil {
			a = &acc{messages: map[string]bool{}, sources: map[string]bool{}}
			byObject[key][e.Reason] = a
		}
		a.messages[containerImage.ReplaceAllString(n.value(e.Message), `Container image "<image>"`)] = true
		if src := n.eventSource(e); src != "" {
			a.sources[src] = true
		}
		a.count += eventCount(e)
	}
	for key, byReason := range byObject {
		o := objects[key]
		o.Events = map[string]EventSummary{}
		for reason, a := range byReason {
			o.Events[reason] = EventSummary{Messages: slices.Sorted(maps.Keys(a.messages)),
				Sources: slices.Sorted(maps.Keys(a.sources)), Count: a.count}
		}
		objects[key] = o
	}
}

// eventObject is the key of the object an event is about; ok is false for
// an event a snapshot leaves out.
func (n *Normaliser) eventObject(e corev1.Event) (key string, ok bool) {
	ref := e.InvolvedObject
	// Only the lifecycle's objects: a control plane also reports on its
	// own (a ServiceCIDR, say), which the simulator has not.
	if slices.Contains(systemNamespaces, ref.Namespace) || !slices.Contains(kindOrder, ref.Kind) {
		return "", false
	}
	// What a real kubelet says of the machine it runs on, not of the
	// lifecycle: these machines have cgroup v1.
	if slices.Contains(machineEventReasons, e.Reason) {
		return "", false
	}
	if ref.Namespace == "" {
		return Object{Kind: ref.Kind, Name: n.name(ref.Name)}.Key(), true
	}
	return Object{Kind: ref.Kind, Name: n.name(qualified(ref.Namespace, ref.Name))}.Key(), true
}

// eventCount is how many times an event was reported: its count, or its
// series' (an events.k8s.io recorder counts there), and at least once.
func eventCount(e corev1.Event) int32 {
	c := e.Count
	if e.Series != nil && e.Series.Count > c {
		c = e.Series.Count
	}
	return max(c, 1)
}

// eventSource says who reported an event, as `kubectl get events -o wide`
// shows it: the reporting controller and instance (an events.k8s.io
// recorder's), else the source's component and host (a core recorder's,
// which client-go copies into the reporting fields too). Generated parts
// of an instance's name, UIDs and the machine's host name, become
// placeholders.
func (n *Normaliser) eventSource(e corev1.Event) string {
	component, instance := e.ReportingController, e.ReportingInstance
	if component == "" {
		component, instance = e.Source.Component, e.Source.Host
	}
	s := n.hostless(n.value(component))
	if instance != "" {
		s += "/" + n.hostless(n.value(instance))
	}
	return s
}

// hostless replaces the machine's host name in s with <host>.
func (n *Normaliser) hostless(s string) string {
	for _, re := range n.hosts {
		s = re.ReplaceAllString(s, "${1}<host>${2}")
	}
	return s
}

// machineEventReasons are the reasons of events about the machine a
// real node runs on, left out of snapshots.
var machineEventReasons = []string{"CgroupV1"}

// containerImage is the image in the kubelet's Pulled message: real nodes
// run csisim's workload image in every container (nothing can be pulled
// here), the simulator names the image the pod asks for.
var containerImage = regexp.MustCompile(`Container image "[^"]*"`)
