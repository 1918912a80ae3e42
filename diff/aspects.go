package diff

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// An aspect is one thing a comparison looks at: a field of an object, or,
// with an empty field, whether the object is there at all.
type aspect struct{ object, field string }

// callsObject is the object name under which a volume's CSI calls are
// compared.
func callsObject(volume string) string { return "CSI calls on " + volume }

// aspects are what the snapshot shows, each aspect's value; an aspect it
// does not show has no entry. The CSI calls of a volume are one aspect,
// all the calls so far.
func (s Snapshot) aspects() map[aspect]string {
	out := map[aspect]string{}
	for key, o := range s.Objects {
		o.aspects(func(field, value string) {
			if value != "" {
				out[aspect{key, field}] = value
			}
		})
	}
	for volume, calls := range s.CSICalls {
		out[aspect{callsObject(volume), ""}] = callsString(calls)
	}
	return out
}

// Presence values of an object's "" aspect.
const (
	present    = "present"
	eventsOnly = "gone (events only)"
)

// aspects calls add with each field of the object and its value.
func (o Object) aspects(add func(field, value string)) {
	if o.Exists {
		add("", present)
	} else {
		add("", eventsOnly)
	}
	for k, v := range o.Labels {
		add("label "+k, v)
	}
	for k, v := range o.Annotations {
		add("annotation "+k, v)
	}
	add("finalizers", strings.Join(o.Finalizers, ", "))
	add("owners", strings.Join(o.Owners, ", "))
	add("phase", o.Phase)
	for t, v := range o.Conditions {
		// The message apart: it may differ in wording where the status
		// and reason agree, and the two change at other moments.
		state, message, _ := strings.Cut(v, ": ")
		add("condition "+t, state)
		add("condition "+t+" message", message)
	}
	for k, v := range o.Fields {
		add(k, v)
	}
	add("managers", strings.Join(o.Managers, ", "))
	for reason, e := range o.Events {
		messages := strings.Join(e.Messages, " | ")
		if messages == "" {
			messages = "(no message)"
		}
		add("event "+reason, messages)
		add("event "+reason+" source", strings.Join(e.Sources, ", "))
		add("event "+reason+" count", fmt.Sprint(e.Count))
	}
}

// eventCountField says whether a field is an event's count, and of which
// event reason's field.
func eventCountField(field string) (eventField string, ok bool) {
	if !strings.HasPrefix(field, "event ") {
		return "", false
	}
	return strings.CutSuffix(field, " count")
}

// fieldRank orders an object's fields in a report: whether it is there,
// then its metadata, its status, its fields, who wrote it, its events.
func fieldRank(field string) int {
	prefixes := []string{"label ", "annotation ", "finalizers", "owners", "phase", "condition "}
	switch {
	case field == "":
		return 0
	case strings.HasPrefix(field, "event "):
		return len(prefixes) + 3
	case field == "managers":
		return len(prefixes) + 2
	}
	for i, p := range prefixes {
		if strings.HasPrefix(field, p) {
			return i + 1
		}
	}
	return len(prefixes) + 1
}

// orderedAspects are the aspects of both maps, in a report's order: by
// object in the lifecycle's kind order and then by name, the CSI calls
// last; within an object by fieldRank and then by name.
func orderedAspects(a, b map[aspect]string) []aspect {
	all := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			all = append(all, k)
		}
	}
	rank := func(object string) int {
		kind, _, _ := strings.Cut(object, " ")
		if i := slices.Index(kindOrder, kind); i >= 0 {
			return i
		}
		return len(kindOrder)
	}
	slices.SortFunc(all, func(x, y aspect) int {
		if c := rank(x.object) - rank(y.object); c != 0 {
			return c
		}
		if c := strings.Compare(x.object, y.object); c != 0 {
			return c
		}
		if c := fieldRank(x.field) - fieldRank(y.field); c != 0 {
			return c
		}
		return strings.Compare(x.field, y.field)
	})
	return all
}
