package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMermaid writes tl as a Mermaid sequence diagram: one participant per
// lane (the components, the API server, the CSI plugins), API writes as
// messages to the API server, CSI calls as messages to their plugin (a
// cross for a failed one), scenario steps, faults and data checks as notes
// over their actor, and invariant violations as notes across every lane
// after the last entry they name.
func WriteMermaid(w io.Writer, tl Timeline) error {
	bw := bufio.NewWriter(w)
	lanes := tl.lanes()
	ids := make(map[string]string, len(lanes))
	bw.WriteString("sequenceDiagram\n")
	for i, l := range lanes {
		id := "L" + strconv.Itoa(i+1)
		ids[l.ID] = id
		fmt.Fprintf(bw, "    participant %s as %s\n", id, mermaidText(l.Title))
	}
	span := "L1"
	if len(lanes) > 1 {
		span = "L1,L" + strconv.Itoa(len(lanes))
	}
	// Each violation goes after the last entry it names.
	after := map[int][]Violation{}
	for _, v := range tl.Violations {
		at := tl.violationAt(v)
		after[at.Seq] = append(after[at.Seq], v)
	}
	writeViolations := func(seq int) {
		for _, v := range after[seq] {
			text := tl.scrub(v.Label())
			fmt.Fprintf(bw, "    Note over %s: %s\n", span, mermaidText(text))
		}
	}
	writeViolations(0) // a timeline without entries
	for _, e := range tl.Entries {
		from := ids[e.Actor]
		text := mermaidText(tl.scrub(entryLabel(e)))
		switch to := target(e); {
		case to != "":
			arrow := "->>"
			if e.Err != "" || (e.Call != nil && e.Call.Code != 0) {
				arrow = "-x"
			}
			fmt.Fprintf(bw, "    %s%s%s: %s\n", from, arrow, ids[to], text)
		default:
			fmt.Fprintf(bw, "    Note over %s: %s\n", from, text)
		}
		writeViolations(e.Seq)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the Mermaid timeline: %w", err)
	}
	return nil
}

// entryLabel is what the diagram writes on an entry: its number and time,
// then what happened.
func entryLabel(e Entry) string {
	return fmt.Sprintf("#%d %s %s", e.Seq, formatOffset(e.At), happened(e))
}

// pageLabel is what the page writes on an entry, beside its time: its
// number, then what happened.
func pageLabel(e Entry) string {
	return fmt.Sprintf("#%d %s", e.Seq, happened(e))
}

// happened says what an entry is: its kind (for those not drawn as a
// message), verb, object, detail and error.
func happened(e Entry) string {
	var parts []string
	if e.Kind != API && e.Kind != CSI {
		parts = append(parts, string(e.Kind))
	}
	for _, s := range []string{e.Verb, e.Object, e.Detail} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if e.Err != "" {
		parts = append(parts, "ERROR: "+e.Err)
	}
	return strings.Join(parts, " ")
}

// mermaidText makes s safe as the text of a message, a note or a
// participant's alias: on one line, without what the Mermaid lexer ends a
// text at (#, ; and the newline), without what it would read as HTML (<, >,
// &) or as a directive (%%{); each is written as Mermaid's entity code
// (#<decimal code point>;), which the diagram shows as the character.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '#', ';', '<', '>', '&', '%', '"', '\\', '`':
			fmt.Fprintf(&b, "#%d;", r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}
