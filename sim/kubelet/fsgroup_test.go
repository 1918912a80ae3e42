package kubelet

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func TestKubeletAppliesFSGroup(t *testing.T) {
	gid := int64(2000)
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	base := fsGroupRequest{FSGroup: &gid, Policy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, FSType: "ext4", AccessModes: rwo}
	tests := []struct {
		name string
		edit func(*fsGroupRequest)
		want bool
	}{
		{"default policy, fsType and RWO", func(*fsGroupRequest) {}, true},
		{"no fsGroup", func(r *fsGroupRequest) { r.FSGroup = nil }, false},
		{"default policy without fsType", func(r *fsGroupRequest) { r.FSType = "" }, false},
		{"default policy, RWX only", func(r *fsGroupRequest) { r.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany} }, false},
		{"default policy, RWX and RWO", func(r *fsGroupRequest) {
			r.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}
		}, true},
		{"default policy, RWOP", func(r *fsGroupRequest) { r.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod} }, true},
		{"default policy, no access modes", func(r *fsGroupRequest) { r.AccessModes = nil }, false},
		{"File ignores fsType and modes", func(r *fsGroupRequest) {
			r.Policy, r.FSType, r.AccessModes = storagev1.FileFSGroupPolicy, "", []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}
		}, true},
		{"File but read-only mount", func(r *fsGroupRequest) { r.Policy, r.ReadOnly = storagev1.FileFSGroupPolicy, true }, false},
		{"None", func(r *fsGroupRequest) { r.Policy = storagev1.NoneFSGroupPolicy }, false},
		{"File but delegated to the driver", func(r *fsGroupRequest) { r.Policy, r.Delegated = storagev1.FileFSGroupPolicy, true }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			if got := kubeletAppliesFSGroup(r); got != tt.want {
				t.Errorf("kubeletAppliesFSGroup(%+v) = %v, want %v", r, got, tt.want)
			}
		})
	}
}

// testGroup is a group the test may give files to: any as root, else the
// process's own.
func testGroup() int64 {
	if os.Getuid() == 0 {
		return 2000
	}
	return int64(os.Getgid())
}

func statOf(t *testing.T, path string) (os.FileMode, int64) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode(), int64(fi.Sys().(*syscall.Stat_t).Gid)
}

func volumeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mount")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "sub/b"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestSetVolumeOwnershipRecursive(t *testing.T) {
	gid := testGroup()
	root := volumeTree(t)
	outside, _ := os.Readlink(filepath.Join(root, "link"))
	if err := setVolumeOwnership(root, gid, nil, false); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		root:                         os.ModeDir | os.ModeSetgid | 0o770,
		filepath.Join(root, "sub"):   os.ModeDir | os.ModeSetgid | 0o770,
		filepath.Join(root, "a"):     0o660,
		filepath.Join(root, "sub/b"): 0o660,
		filepath.Join(root, "link"):  os.ModeSymlink | 0o777,
		outside:                      0o600,
	} {
		mode, group := statOf(t, path)
		if mode != want {
			t.Errorf("%s: mode %v, want %v", path, mode, want)
		}
		if mode&os.ModeSymlink == 0 && path != outside && group != gid {
			t.Errorf("%s: group %d, want %d", path, group, gid)
		}
	}
	if _, group := statOf(t, outside); group == gid && gid != int64(os.Getgid()) {
		t.Errorf("the symlink's target outside the volume was given to the group")
	}
}

func TestSetVolumeOwnershipReadOnly(t *testing.T) {
	root := volumeTree(t)
	if err := setVolumeOwnership(root, testGroup(), nil, true); err != nil {
		t.Fatal(err)
	}
	if mode, _ := statOf(t, filepath.Join(root, "a")); mode != 0o640 {
		t.Errorf("file on a read-only volume: mode %v, want 0640 (0600 plus group read)", mode)
	}
	if mode, _ := statOf(t, root); mode != os.ModeDir|os.ModeSetgid|0o750 {
		t.Errorf("root of a read-only volume: mode %v, want dgrwxr-x--- with setgid", mode)
	}
}

func TestSetVolumeOwnershipOnRootMismatch(t *testing.T) {
	gid := testGroup()
	policy := corev1.FSGroupChangeOnRootMismatch

	// The root already has the group and the bits: nothing is touched.
	root := volumeTree(t)
	if err := os.Chown(root, -1, int(gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	if err := setVolumeOwnership(root, gid, &policy, false); err != nil {
		t.Fatal(err)
	}
	if mode, _ := statOf(t, filepath.Join(root, "a")); mode != 0o600 {
		t.Errorf("OnRootMismatch with a matching root changed a file: mode %v", mode)
	}

	// Without setgid on the root it is a mismatch: everything changes.
	if err := os.Chmod(root, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := setVolumeOwnership(root, gid, &policy, false); err != nil {
		t.Fatal(err)
	}
	if mode, _ := statOf(t, filepath.Join(root, "a")); mode != 0o660 {
		t.Errorf("OnRootMismatch with a mismatching root: file mode %v, want 0660", mode)
	}
	if mode, _ := statOf(t, root); mode&os.ModeSetgid == 0 {
		t.Errorf("root has no setgid after the change: %v", mode)
	}
}
