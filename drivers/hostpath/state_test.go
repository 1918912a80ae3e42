package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestStateSurvivesRestart(t *testing.T) {
	env := newTestEnv(t)
	stateDir := filepath.Join(env.dir, "state")
	cfg := Config{StateDir: stateDir}
	r := env.start(t, cfg)
	ctx := context.Background()

	l := newLifecycle(t, env, r, "pvc-keep")
	if _, err := r.ctrl.CreateVolume(ctx, createReq("pvc-also", 7*mib, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: l.id, NodeId: "node-1", VolumeCapability: rwo}); err != nil {
		t.Fatal(err)
	}
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	r.stop()
	if _, err := os.Stat(filepath.Join(stateDir, stateFileName)); err != nil {
		t.Fatalf("no state file: %v", err)
	}

	r2 := env.start(t, cfg)
	list, err := r2.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range list.GetEntries() {
		got[e.GetVolume().GetVolumeId()] = e.GetVolume().GetCapacityBytes()
	}
	if len(got) != 2 || got[l.id] != 1<<30 || got[volumeIDFor("pvc-also")] != 7*mib {
		t.Fatalf("volumes after restart = %v", got)
	}
	// The restarted plugin remembers the publication and the staging.
	_, err = r2.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: l.id, NodeId: "node-1", VolumeCapability: rwo, Readonly: true})
	wantCode(t, err, 6 /* AlreadyExists */)
	l.r = r2
	if err := l.publish(l.target, false); err != nil {
		t.Fatalf("publish after restart without re-staging: %v", err)
	}
	if err := l.unpublish(l.target); err != nil {
		t.Fatal(err)
	}
	if err := l.unstage(); err != nil {
		t.Fatal(err)
	}
}

func TestStateStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	store := &stateStore{path: filepath.Join(dir, "sub", stateFileName)}
	st, err := store.load()
	if err != nil {
		t.Fatalf("load of missing file: %v", err)
	}
	st.Volumes["vol-1"] = &volumeRecord{ID: "vol-1", Name: "n", CapacityBytes: 5,
		PublishedNodes: map[string]*controllerPublishRecord{"node-1": {AccessMode: "SINGLE_NODE_WRITER"}}}
	st.Staged["vol-1"] = &stageRecord{StagingPath: "/s"}
	st.Published["vol-1"] = map[string]*publishRecord{"/t": {Readonly: true}}
	if err := store.save(st); err != nil {
		t.Fatal(err)
	}
	back, err := store.load()
	if err != nil {
		t.Fatal(err)
	}
	if back.Volumes["vol-1"].PublishedNodes["node-1"].AccessMode != "SINGLE_NODE_WRITER" ||
		back.Staged["vol-1"].StagingPath != "/s" || !back.Published["vol-1"]["/t"].Readonly {
		t.Fatalf("round trip lost data: %+v", back)
	}
	entries, err := os.ReadDir(filepath.Dir(store.path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("temporary files left beside the state: %v", entries)
	}

	if err := os.WriteFile(store.path, []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.load(); err == nil || !strings.Contains(err.Error(), "parse state") {
		t.Fatalf("load of corrupt state: %v", err)
	}
}

func TestVolumeIDs(t *testing.T) {
	if a, b := volumeIDFor("pvc-1"), volumeIDFor("pvc-1"); a != b {
		t.Fatalf("IDs differ for the same name: %s, %s", a, b)
	}
	if volumeIDFor("pvc-1") == volumeIDFor("pvc-2") {
		t.Fatal("different names share an ID")
	}
	tests := []struct {
		id      string
		valid   bool
		ourForm bool
	}{
		{volumeIDFor("x"), true, true},
		{"fake-vol-id-0123456789", true, false},
		{"vol-0123456789abcdef012", true, false}, // 19 hex digits
		{"", false, false},
		{"..", false, false},
		{"a/b", false, false},
		{"Vol-1", false, false},
		{"vol 1", false, false},
		{strings.Repeat("a", 128), true, false},
		{strings.Repeat("a", 129), false, false},
	}
	for _, tc := range tests {
		if got := checkVolumeID(tc.id) == nil; got != tc.valid {
			t.Errorf("checkVolumeID(%q) valid = %v, want %v", tc.id, got, tc.valid)
		}
		if got := isVolumeIDWeMake(tc.id); got != tc.ourForm {
			t.Errorf("isVolumeIDWeMake(%q) = %v, want %v", tc.id, got, tc.ourForm)
		}
	}
}
