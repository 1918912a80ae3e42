package trace

import (
	"bytes"
	"strings"
	"testing"
)

// A CSI entry of a cluster of several drivers says its driver, in the
// text timeline and in JSON, and reads back with it; one without a driver
// reads as it always did.
func TestEntryDriver(t *testing.T) {
	e := Entry{Seq: 1, Kind: CSI, Actor: "kubelet:node-1", Verb: "NodePublishVolume", Object: "vol-1", Detail: "OK", Driver: "files.example.com"}
	if got := e.Canonical(); !strings.Contains(got, "vol-1  driver=files.example.com  OK") {
		t.Errorf("text line %q does not name the driver after the volume", got)
	}
	plain := e
	plain.Driver = ""
	if strings.Contains(plain.Canonical(), "driver=") {
		t.Errorf("an entry without a driver names one: %q", plain.Canonical())
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, Timeline{Entries: []Entry{e, plain}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.Contains(lines[0], `"driver":"files.example.com"`) || strings.Contains(lines[1], `"driver"`) {
		t.Errorf("JSON lines:\n%s", b.String())
	}
	tl, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Entries[0].Driver != "files.example.com" || tl.Entries[1].Driver != "" {
		t.Errorf("read back: %+v", tl.Entries)
	}
}
