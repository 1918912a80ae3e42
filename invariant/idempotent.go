package invariant

import (
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/trace"
)

// idempotentRetry: a CreateVolume repeated with the name of an earlier one
// whose volume was not deleted since is answered with that volume. The CSI
// spec makes CreateVolume idempotent by name ("If a volume corresponding
// to the specified volume name already exists, is accessible from
// accessibility_requirements, and is compatible with the specified
// capacity_range, volume_capabilities, parameters and
// mutable_parameters ... the Plugin MUST reply 0 OK with the corresponding
// CreateVolumeResponse"; with other parameters ALREADY_EXISTS), and the
// callers count on it: a caller that retries after a lost answer or a
// crash gets the volume the first call made. A driver that makes a second
// volume leaves the first one behind (no-leaked-volume says so too). The
// driver's answers count whether the caller heard them or not (FAULT
// entries carrying an answer the caller lost).
var idempotentRetry = Invariant{
	Name: "idempotent-retry",
	Doc:  "a CreateVolume repeated with the name of an earlier one whose volume was not deleted since is answered with that same volume",
	Check: func(h *History) []Violation {
		type made struct {
			vol string
			seq int
		}
		byName := map[string]made{}
		var found []Violation
		for _, e := range h.Entries {
			c := e.Call
			if c == nil || c.Code != codes.OK || (e.Kind != trace.CSI && e.Kind != trace.Fault) {
				continue
			}
			switch e.Verb {
			case "CreateVolume":
				if c.Name == "" || c.Volume == "" {
					continue
				}
				if prev, ok := byName[c.Name]; ok && prev.vol != c.Volume {
					found = append(found, Violation{Entries: []int{e.Seq, prev.seq},
						Message: fmt.Sprintf("CreateVolume #%d of name %s was answered with volume %s, but CreateVolume #%d of that name had made volume %s, which was not deleted since: the driver is not idempotent",
							e.Seq, c.Name, c.Volume, prev.seq, prev.vol)})
				}
				byName[c.Name] = made{vol: c.Volume, seq: e.Seq}
			case "DeleteVolume":
				for name, m := range byName {
					if m.vol == c.Volume {
						delete(byName, name)
					}
				}
			}
		}
		return found
	},
}
