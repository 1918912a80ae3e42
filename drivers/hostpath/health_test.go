package hostpath

import (
	"context"
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// healthOf is a volume's health as each of the three calls reports it:
// ControllerGetVolumeHealth, ControllerListVolumeHealth's entry (nil when
// the volume is not listed) and NodeGetVolumeHealth.
func healthOf(t *testing.T, r *running, id string) (get, listed, node []*csi.VolumeHealth_VolumeHealthEntry) {
	t.Helper()
	ctx := context.Background()
	g, err := r.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.ctrl.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.GetEntries() {
		if e.GetVolumeId() == id {
			listed = e.GetHealthStatuses()
		}
	}
	n, err := r.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	return g.GetVolumeHealth().GetHealthStatuses(), listed, n.GetVolumeHealth().GetHealthStatuses()
}

// A volume is healthy until the backend says otherwise: every health call
// then reports the condition, and reports it no more once cleared; a
// volume whose directory is gone is INACCESSIBLE to the controller.
func TestVolumeHealth(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	vol, err := r.ctrl.CreateVolume(ctx, createReq("pvc-h", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	if g, l, n := healthOf(t, r, id); len(g)+len(l)+len(n) != 0 {
		t.Fatalf("new volume: get %v, list %v, node %v, want all healthy", g, l, n)
	}
	c := &HealthCondition{Status: "DEGRADED", Reason: "ReplicaLost", Message: "one of two replicas is lost"}
	if err := SetVolumeHealth(env.root, id, c); err != nil {
		t.Fatal(err)
	}
	g, l, n := healthOf(t, r, id)
	for _, got := range [][]*csi.VolumeHealth_VolumeHealthEntry{g, l, n} {
		if len(got) != 1 || got[0].GetStatus() != csi.VolumeHealthErrorType_DEGRADED || got[0].GetReason() != c.Reason || got[0].GetMessage() != c.Message {
			t.Fatalf("after SetVolumeHealth: %v, want one DEGRADED ReplicaLost", got)
		}
	}
	if err := SetVolumeHealth(env.root, id, nil); err != nil {
		t.Fatal(err)
	}
	if g, l, n := healthOf(t, r, id); len(g)+len(l)+len(n) != 0 {
		t.Fatalf("cleared: get %v, list %v, node %v, want all healthy", g, l, n)
	}
	if err := os.RemoveAll(r.d.volumeDir(id)); err != nil {
		t.Fatal(err)
	}
	resp, err := r.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.GetVolumeHealth().GetHealthStatuses(); len(e) != 1 || e[0].GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE || e[0].GetReason() != ReasonBackingMissing {
		t.Fatalf("backing removed: %v, want INACCESSIBLE %s", e, ReasonBackingMissing)
	}
	_, err = r.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id})
	wantCode(t, err, codes.NotFound)
}

// The spec's errors, and what SetVolumeHealth refuses.
func TestVolumeHealthErrors(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	unknown := volumeIDFor("pvc-none")
	_, err := r.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: unknown})
	wantCode(t, err, codes.NotFound)
	_, err = r.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = r.ctrl.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{StartingToken: "nonsense"})
	wantCode(t, err, codes.Aborted)
	_, err = r.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: unknown})
	wantCode(t, err, codes.NotFound)
	if err := SetVolumeHealth(env.root, unknown, &HealthCondition{Status: "DEGRADED", Reason: "X"}); err == nil {
		t.Error("SetVolumeHealth of a volume not in the backend succeeded")
	}
	vol, err := r.ctrl.CreateVolume(ctx, createReq("pvc-e", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []HealthCondition{{Status: "BROKEN", Reason: "X"}, {Status: "DEGRADED"}} {
		if err := SetVolumeHealth(env.root, vol.GetVolume().GetVolumeId(), &c); err == nil {
			t.Errorf("SetVolumeHealth(%+v) succeeded", c)
		}
	}
}

// ControllerListVolumeHealth leaves healthy volumes out and pages the
// others by max_entries.
func TestListVolumeHealthPages(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	var sick []string
	for i, name := range []string{"pvc-a", "pvc-b", "pvc-c", "pvc-d"} {
		vol, err := r.ctrl.CreateVolume(ctx, createReq(name, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			continue
		}
		id := vol.GetVolume().GetVolumeId()
		sick = append(sick, id)
		if err := SetVolumeHealth(env.root, id, &HealthCondition{Status: "DATA_LOSS", Reason: "DiskFailed"}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > len(sick) {
			t.Fatalf("more than %d pages of one entry", len(sick))
		}
		resp, err := r.ctrl.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{MaxEntries: 1, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetEntries()) > 1 {
			t.Fatalf("a page of max_entries 1 has %d entries", len(resp.GetEntries()))
		}
		for _, e := range resp.GetEntries() {
			got = append(got, e.GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	if len(got) != len(sick) {
		t.Fatalf("listed %v, want the unhealthy %v", got, sick)
	}
	for _, id := range sick {
		found := false
		for _, g := range got {
			found = found || g == id
		}
		if !found {
			t.Errorf("unhealthy %s not listed (got %v)", id, got)
		}
	}
}
