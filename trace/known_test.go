package trace

import (
	"bytes"
	"strings"
	"testing"
)

// A violation a known Kubernetes bug caused keeps its bug through the JSON
// Lines format, and the Mermaid note and the HTML page say KNOWN; the page
// does not mark it failed.
func TestKnownUpstreamViolationInTheFormats(t *testing.T) {
	tl := Timeline{Entries: []Entry{{Seq: 1, Kind: CSI, Actor: "external-provisioner", Verb: "DeleteVolume", Object: "v1"}},
		Violations: []Violation{{Invariant: "csi-call-order", Message: "DeleteVolumeWhileInUse", Entries: []int{1}, KnownUpstream: "kubernetes#121937"}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, tl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"knownUpstream":"kubernetes#121937"`) {
		t.Errorf("JSON lacks knownUpstream:\n%s", buf.String())
	}
	got, err := ReadJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Violations) != 1 || got.Violations[0].KnownUpstream != "kubernetes#121937" {
		t.Errorf("read back %+v, want the known upstream bug", got.Violations)
	}
	buf.Reset()
	if err := WriteMermaid(&buf, tl); err != nil {
		t.Fatal(err)
	}
	if want := "KNOWN  kubernetes#35;121937: INVARIANT csi-call-order violated: DeleteVolumeWhileInUse"; !strings.Contains(buf.String(), want) {
		t.Errorf("Mermaid lacks %q:\n%s", want, buf.String())
	}
	if l := (Violation{Invariant: "x", Message: "m"}).Label(); l != "INVARIANT x violated: m" {
		t.Errorf("an ordinary violation's label %q", l)
	}
}
