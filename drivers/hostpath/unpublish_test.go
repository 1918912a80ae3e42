package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// NodeUnpublishVolume removes only a target it created: a path where the
// volume was never published (a user's file or directory, empty or not)
// and a target the CO made before publishing stay, and the call answers
// OK as the CSI spec's idempotency asks.
func TestNodeUnpublishVolumeDeletesOnlyWhatItCreated(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	l := newLifecycle(t, env, r, "pvc-mine")
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(env.dir, "user")
	if err := os.MkdirAll(filepath.Join(users, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, dir := range map[string]bool{filepath.Join(users, "empty"): true, filepath.Join(users, "file"): false, filepath.Join(users, "full", "data"): false} {
		var err error
		if dir {
			err = os.Mkdir(path, 0o755)
		} else {
			err = os.WriteFile(path, []byte("keep"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []string{filepath.Join(users, "empty"), filepath.Join(users, "file"), filepath.Join(users, "full")} {
		if err := l.unpublish(target); err != nil {
			t.Errorf("NodeUnpublishVolume of %s, where the volume is not published: %v, want OK", target, err)
		}
		if _, err := os.Lstat(target); err != nil {
			t.Errorf("NodeUnpublishVolume removed %s, which it did not create: %v", target, err)
		}
	}

	// A target the CO created is unmounted, not removed.
	made := filepath.Join(env.dir, "kubelet", "pods", "co-made", "mount")
	if err := os.MkdirAll(made, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := l.publish(made, false); err != nil {
		t.Fatal(err)
	}
	wantMounted(t, made, true)
	if err := l.unpublish(made); err != nil {
		t.Fatal(err)
	}
	wantMounted(t, made, false)
	if _, err := os.Stat(made); err != nil {
		t.Errorf("the CO's target %s was removed: %v", made, err)
	}

	// The plugin's own target goes, also after a repeated publish.
	for range 2 {
		if err := l.publish(l.target, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.unpublish(l.target); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin's own target %s was not removed: %v", l.target, err)
	}
}
