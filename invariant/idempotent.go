package invariant

import (
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/trace"
)

// idempotentRetry: a CreateVolume (CreateSnapshot) repeated with the name
// of an earlier one whose volume (snapshot) was not deleted since is
// answered with that volume (snapshot). The CSI spec makes both idempotent
// by name ("If a volume corresponding to the specified volume name already
// exists, is accessible from accessibility_requirements, and is compatible
// with the specified capacity_range, volume_capabilities, parameters and
// mutable_parameters ... the Plugin MUST reply 0 OK with the corresponding
// CreateVolumeResponse"; CreateSnapshot likewise for the source volume and
// parameters; with other arguments ALREADY_EXISTS), and the callers count
// on it: a caller that retries after a lost answer or a crash gets what
// the first call made. A driver that makes a second one leaves the first
// behind (no-leaked-volume says so too). The driver's answers count
// whether the caller heard them or not (FAULT entries carrying an answer
// the caller lost).
var idempotentRetry = Invariant{
	Name: "idempotent-retry",
	Doc:  "a CreateVolume or CreateSnapshot repeated with the name of an earlier one whose volume or snapshot was not deleted since is answered with that same volume or snapshot",
	Check: func(h *History) []Violation {
		volumes, snapshots := byName{what: "volume"}, byName{what: "snapshot"}
		var found []Violation
		for _, e := range h.Entries {
			c := e.Call
			if c == nil || c.Code != codes.OK || (e.Kind != trace.CSI && e.Kind != trace.Fault) {
				continue
			}
			var v *Violation
			switch e.Verb {
			case "CreateVolume":
				v = volumes.made(e.Verb, e.Seq, c.Name, c.Volume)
			case "DeleteVolume":
				volumes.deleted(c.Volume)
			case "CreateSnapshot":
				v = snapshots.made(e.Verb, e.Seq, c.Name, c.Snapshot)
			case "DeleteSnapshot":
				snapshots.deleted(c.Snapshot)
			}
			if v != nil {
				found = append(found, *v)
			}
		}
		return found
	},
}

// byName is what the driver made under each name and did not delete
// since: the ID it answered with and the entry that says so.
type byName struct {
	what string // "volume" or "snapshot", for messages
	ids  map[string]string
	seqs map[string]int
}

// made notes the answer of a create call and returns a violation when an
// earlier call of the name had made another one that is still there.
func (b *byName) made(verb string, seq int, name, id string) *Violation {
	if name == "" || id == "" {
		return nil
	}
	if b.ids == nil {
		b.ids, b.seqs = map[string]string{}, map[string]int{}
	}
	var v *Violation
	if prev, ok := b.ids[name]; ok && prev != id {
		v = &Violation{Entries: []int{seq, b.seqs[name]},
			Message: fmt.Sprintf("%s #%d of name %s was answered with %s %s, but %s #%d of that name had made %s %s, which was not deleted since: the driver is not idempotent",
				verb, seq, name, b.what, id, verb, b.seqs[name], b.what, prev)}
	}
	b.ids[name], b.seqs[name] = id, seq
	return v
}

// deleted forgets the names of id.
func (b *byName) deleted(id string) {
	for name, made := range b.ids {
		if made == id {
			delete(b.ids, name)
			delete(b.seqs, name)
		}
	}
}
