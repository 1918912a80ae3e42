package csisimtest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// events lists the Events about one object, oldest first. Events of a
// cluster-scoped object are in the default namespace, where the
// components' event recorders put them. uid, if set, keeps only the events
// of that object, not of an earlier one of the same name.
func (c *Cluster) events(namespace, kind, name, uid string) ([]corev1.Event, error) {
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	list, err := c.client.CoreV1().Events(namespace).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Events in %s: %w", namespace, err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		io := ev.InvolvedObject
		if io.Kind == kind && io.Name == name && (uid == "" || io.UID == "" || string(io.UID) == uid) {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).Before(eventTime(out[j])) })
	return out, nil
}

func eventTime(ev corev1.Event) time.Time {
	if !ev.LastTimestamp.IsZero() {
		return ev.LastTimestamp.Time
	}
	return ev.EventTime.Time
}

// eventsOn is "; its events:" and the list, for a failure message about
// obj; "" when there are none or c is nil (a matcher handed the object
// without its cluster).
func (c *Cluster) eventsOn(obj runtime.Object) string {
	if c == nil {
		return ""
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return ""
	}
	kind := ""
	if gvk, err := gvkOf(obj); err == nil {
		kind = gvk.Kind
	}
	events, err := c.events(m.GetNamespace(), kind, m.GetName(), string(m.GetUID()))
	if err != nil {
		return "; its events could not be listed: " + err.Error()
	}
	if len(events) == 0 {
		return ""
	}
	return "; its events:" + listEvents(events)
}

func listEvents(events []corev1.Event) string {
	if len(events) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, ev := range events {
		b.WriteString("\n    " + describeEvent(ev))
	}
	return b.String()
}

func describeEvent(ev corev1.Event) string {
	s := fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message)
	if ev.Count > 1 {
		s += fmt.Sprintf(" (x%d)", ev.Count)
	}
	if ev.Source.Component != "" {
		s += " [" + ev.Source.Component + "]"
	} else if ev.ReportingController != "" {
		s += " [" + ev.ReportingController + "]"
	}
	return s
}
