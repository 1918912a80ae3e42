package kubelet

// Giving a published volume to the pod's fsGroup — models kubernetes
// pkg/volume/csi/csi_mounter.go (supportsFSGroup, the CSIDriver's
// fsGroupPolicy) and pkg/volume/volume_linux.go (SetVolumeOwnership, with
// the fsGroupChangePolicy).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// fsGroupRequest is what decides whether the kubelet itself gives a
// published volume to the pod's fsGroup.
type fsGroupRequest struct {
	FSGroup *int64
	// Policy is the CSIDriver's fsGroupPolicy (ReadWriteOnceWithFSType
	// when there is no CSIDriver object).
	Policy   storagev1.FSGroupPolicy
	ReadOnly bool // the pod mounts the claim read-only
	FSType   string
	// AccessModes are the PV's.
	AccessModes []corev1.PersistentVolumeAccessMode
	// Delegated: the driver has VOLUME_MOUNT_GROUP, so the fsGroup went
	// to it as volume_mount_group and the kubelet changes nothing.
	Delegated bool
}

// kubeletAppliesFSGroup is the CSI plugin's decision: no fsGroup, policy
// None, a read-only mount or a driver that applies it itself mean no; policy
// File means yes; ReadWriteOnceWithFSType needs an fsType and a ReadWriteOnce
// (or ReadWriteOncePod) access mode among the PV's.
func kubeletAppliesFSGroup(r fsGroupRequest) bool {
	if r.Delegated || r.FSGroup == nil || r.Policy == storagev1.NoneFSGroupPolicy || r.ReadOnly {
		return false
	}
	if r.Policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if r.FSType == "" || len(r.AccessModes) == 0 {
		return false
	}
	return slices.Contains(r.AccessModes, corev1.ReadWriteOnce) || slices.Contains(r.AccessModes, corev1.ReadWriteOncePod)
}

// The permission bits the kubelet adds: rw for owner and group (r only on
// a read-only volume), x on directories, and setgid on directories so that
// new files get the group.
const (
	rwBits   = os.FileMode(0o660)
	roBits   = os.FileMode(0o440)
	execBits = os.FileMode(0o110)
)

// setVolumeOwnership gives everything under dir to group fsGroup, as the
// kubelet's SetVolumeOwnership does: the group of every file and directory
// (symlinks skipped), group read-write permissions, directories executable
// and setgid. With fsGroupChangePolicy OnRootMismatch it does nothing when
// the root already has the group and permissions.
func setVolumeOwnership(dir string, fsGroup int64, policy *corev1.PodFSGroupChangePolicy, readOnly bool) error {
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch && !needsOwnershipChange(dir, fsGroup, readOnly) {
		return nil
	}
	return walkChildrenFirst(dir, func(path string, info os.FileInfo) error {
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
		bits := rwBits
		if readOnly {
			bits = roBits
		}
		if info.IsDir() {
			bits |= execBits | os.ModeSetgid
		}
		if err := os.Chmod(path, info.Mode()|bits); err != nil {
			return fmt.Errorf("chmod %s: %w", path, err)
		}
		return nil
	})
}

// needsOwnershipChange reports whether the volume root is not yet the
// fsGroup's with the permissions the kubelet sets.
func needsOwnershipChange(dir string, fsGroup int64, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != fsGroup || !info.IsDir() {
		return true
	}
	want := rwBits
	if readOnly {
		want = roBits
	}
	want |= execBits
	return info.Mode().Perm()&want != want || info.Mode()&os.ModeSetgid == 0
}

// walkChildrenFirst calls fn for everything under root, a directory's
// entries before the directory itself (the kubelet changes the root last,
// so an interrupted change is redone under OnRootMismatch).
func walkChildrenFirst(root string, fn func(string, os.FileInfo) error) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if info.IsDir() {
		entries, err := os.ReadDir(root)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := walkChildrenFirst(filepath.Join(root, e.Name()), fn); err != nil {
				return err
			}
		}
	}
	return fn(root, info)
}
