package kubelet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/csisim/csisim/trace"
	"github.com/csisim/csisim/workload"
)

func dataChecks(rec *trace.Recorder) []*trace.DataCheck {
	var out []*trace.DataCheck
	for _, e := range rec.Filter(trace.Data) {
		out = append(out, e.Check)
	}
	return out
}

func TestWorkloadSaysWhenNothingIsMounted(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()}) // SkipMountCheck: a driver that mounts nothing
	rec := trace.New(clock.RealClock{})
	e.k.cfg.Recorder = rec
	e.runningPod()
	got := dataChecks(rec)
	if len(got) != 1 || got[0].Skipped != "the driver mounts nothing" || got[0].Claim != "data" || got[0].Volume != testPV {
		t.Fatalf("DATA entries: %+v", got)
	}
}

func TestWorkloadWritesAndVerifiesMarkers(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	// The fake node plugin made a plain directory at the target: let the
	// kubelet take it for a mount, as it would take csisim's driver's.
	rec := trace.New(clock.RealClock{})
	e.k.cfg.Recorder, e.k.cfg.SkipMountCheck = rec, false
	e.k.runWorkload(e.pod)
	second := e.pod.DeepCopy()
	second.UID = "uid-2"
	for name, m := range e.k.actual.podVolumes(e.pod.UID) {
		e.k.actual.markMounted(second.UID, name, &m)
	}
	e.k.runWorkload(second)

	got := dataChecks(rec)
	if len(got) != 2 || !got[0].Wrote || len(got[0].Found) != 0 || !got[1].Wrote || !slices.Equal(got[1].Found, []string{"uid-1"}) {
		t.Fatalf("DATA entries: %+v %+v", got[0], got[1])
	}
	entries := rec.Filter(trace.Data)
	if want := "wrote marker, found 1 earlier marker(s) of claim data"; entries[1].Detail != want || !strings.Contains(entries[1].Object, "volume data") {
		t.Errorf("entry: %v; want detail %q", entries[1], want)
	}
	if _, err := os.Stat(filepath.Join(PublishPath(e.dir, "uid-1", testPV), workload.Dir, "uid-1.marker")); err != nil {
		t.Errorf("the first pod's marker: %v", err)
	}
}
