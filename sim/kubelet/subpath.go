package kubelet

// Volume mounts with a subPath (or a subPathExpr): the kubelet's checks of
// the path, the directory it makes inside the volume, the bind mount it
// gives the container under the pod's volume-subpaths directory, and their
// clean-up before the volume is torn down — models kubernetes
// pkg/kubelet/kubelet_pods.go (makeMounts), pkg/volume/util/subpath
// (subpath_linux.go: SafeMakeDir, PrepareSafeSubpath, CleanSubPaths) and
// the unmount operation of
// pkg/volume/util/operationexecutor/operation_generator.go, which cleans a
// volume's subpaths before it calls TearDown (NodeUnpublishVolume).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// subPathsDirName is the pod's directory of subpath bind mounts
// (containerSubPathDirectoryName, kubernetes
// pkg/volume/util/subpath/subpath_linux.go).
const subPathsDirName = "volume-subpaths"

// podDir is the pod's directory under the kubelet directory.
func podDir(kubeletDir string, uid types.UID) string {
	return filepath.Join(kubeletDir, "pods", string(uid))
}

// SubPathTarget is where the kubelet bind-mounts the subPath of the
// container's volume mount number index for the container:
// pods/<pod UID>/volume-subpaths/<volume>/<container>/<index>, where the
// volume is named by its inner volume spec name — a claim's PV, an inline
// volume's own name (makeMounts passes InnerVolumeSpecName).
func SubPathTarget(kubeletDir string, uid types.UID, volume, container string, index int) string {
	return filepath.Join(podDir(kubeletDir, uid), subPathsDirName, volume, container, strconv.Itoa(index))
}

// checkSubPath is makeMounts' check of a subPath (expanded, for a
// subPathExpr): no absolute path, no "..", in the real kubelet's words
// (pkg/kubelet/kubelet_pods.go; the second's cause is
// pkg/volume/validation's ValidatePathNoBacksteps).
func checkSubPath(subPath string) error {
	if filepath.IsAbs(subPath) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, part := range strings.Split(filepath.ToSlash(subPath), "/") {
		if part == ".." {
			return fmt.Errorf("unable to provision SubPath `%s`: %w", subPath, errors.New("must not contain '..'"))
		}
	}
	return nil
}

// subPathMount is one volume mount of a container with a subPath, on a
// volume the kubelet has a directory for.
type subPathMount struct {
	volumePath string // the volume's directory on the node (its publish path)
	subPath    string // checked, relative to volumePath
	volume     string // its inner volume spec name: a claim's PV name
	mount      string // the volumeMount's name: the pod volume's
	container  string
	index      int // of the mount in the container's volumeMounts
}

// prepareSubPath makes the subPath's directory inside the volume if it is
// missing (with the volume directory's mode, never through a symlink out
// of the volume) and bind-mounts it at its target under the pod's
// volume-subpaths directory, unless it is mounted there already. It
// returns the target. The errors are makeMounts': the details stay in the
// kubelet's log, the container gets only which mount failed.
func prepareSubPath(kubeletDir string, uid types.UID, m subPathMount) (string, error) {
	info, err := os.Stat(m.volumePath)
	if err != nil {
		return "", err // GetMode's error, as makeMounts passes it on
	}
	root, err := os.OpenRoot(m.volumePath)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := safeMakeDir(root, m.subPath, info.Mode().Perm()); err != nil {
		return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", m.mount, m.container)
	}
	target := SubPathTarget(kubeletDir, uid, m.volume, m.container, m.index)
	if err := bindSubPath(root, m.subPath, target); err != nil {
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", m.mount, m.container)
	}
	return target, nil
}

// safeMakeDir makes the missing directories of subPath inside root, each
// given perm whatever the umask (doSafeMakeDir); an existing file of that
// name is no error here: the bind mount takes it as it is.
func safeMakeDir(root *os.Root, subPath string, perm fs.FileMode) error {
	if _, err := root.Lstat(subPath); err == nil {
		return nil
	}
	dir := ""
	for _, part := range strings.Split(filepath.Clean(subPath), string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		if _, err := root.Lstat(dir); err == nil {
			continue
		}
		if err := root.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := root.Chmod(dir, perm); err != nil {
			return err
		}
	}
	return nil
}

// bindSubPath bind-mounts subPath, opened inside root so that no symlink
// leads out of the volume, at target through the kubelet's own file
// descriptor (/proc/<pid>/fd/<fd>), as doBindSubPath does. A target that
// is the same file mounted already is kept; a stale one is replaced.
func bindSubPath(root *os.Root, subPath, target string) error {
	src, err := root.Open(subPath)
	if err != nil {
		return fmt.Errorf("error opening subpath %s: %w", subPath, err)
	}
	defer src.Close()
	srcInfo, err := src.Stat()
	if err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		if t, err := os.Lstat(target); err == nil && os.SameFile(srcInfo, t) {
			return nil
		}
		if err := unix.Unmount(target, 0); err != nil {
			return fmt.Errorf("error unmounting %s: %w", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if srcInfo.IsDir() {
		err = os.Mkdir(target, 0o750)
	} else {
		err = os.WriteFile(target, nil, 0o640)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	source := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), src.Fd())
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(target)
		return fmt.Errorf("error mounting %s: %w", subPath, err)
	}
	return nil
}

// cleanSubPaths unmounts and removes every subpath bind mount of one pod
// volume, then the directories that held them, as CleanSubPaths does
// before the volume is torn down: pods/<UID>/volume-subpaths/<volume>/
// <container>/<index>, then <container>, <volume>, and volume-subpaths
// once empty.
func cleanSubPaths(kubeletDir string, uid types.UID, volume string) error {
	base := filepath.Join(podDir(kubeletDir, uid), subPathsDirName)
	dir := filepath.Join(base, volume)
	containers, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no volume mount of the volume had a subPath
	}
	if err != nil {
		return fmt.Errorf("error reading %s: %w", dir, err)
	}
	for _, c := range containers {
		if !c.IsDir() {
			continue
		}
		cdir := filepath.Join(dir, c.Name())
		mounts, err := os.ReadDir(cdir)
		if err != nil {
			return fmt.Errorf("error processing %s: %w", cdir, err)
		}
		for _, m := range mounts {
			if err := cleanSubPathMount(filepath.Join(cdir, m.Name())); err != nil {
				return fmt.Errorf("error processing %s: %w", cdir, err)
			}
		}
		if err := os.Remove(cdir); err != nil {
			return fmt.Errorf("error deleting %s: %w", cdir, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("error deleting %s: %w", dir, err)
	}
	if err := os.Remove(base); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("error deleting %s: %w", base, err)
	}
	return nil
}

// cleanSubPathMount unmounts one subpath bind mount and removes its
// target (CleanupMountPoint).
func cleanSubPathMount(path string) error {
	if mounted, err := mountinfo.Mounted(path); err != nil {
		return fmt.Errorf("error cleaning subpath mount %s: %w", path, err)
	} else if mounted {
		if err := unix.Unmount(path, 0); err != nil {
			return fmt.Errorf("error cleaning subpath mount %s: %w", path, &umountError{target: path, err: err})
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("error cleaning subpath mount %s: %w", path, err)
	}
	return nil
}

// umountError is a failed unmount in the words of the kubelet's mounter,
// which runs umount(8) and quotes it (k8s.io/mount-utils mount_linux.go,
// Unmount and checkUmountError): umount's exit status is 32 (mount
// failure) and, for EBUSY, it says "target is busy."; for another errno it
// says the error's text (umount's own wording of it may differ). The errno
// stays in the chain.
type umountError struct {
	target string
	err    error
}

func (e *umountError) Error() string {
	why := e.err.Error()
	if errors.Is(e.err, unix.EBUSY) {
		why = "target is busy."
	}
	return fmt.Sprintf("unmount failed: exit status 32\nUnmounting arguments: %s\nOutput: umount: %s: %s\n", e.target, e.target, why)
}

func (e *umountError) Unwrap() error { return e.err }

// VolumeMountPath is where the pod's containers see its filesystem volume
// named volume (as spec.volumes names it) on the node: the subPath bind
// mount of the first container that mounts it with a subPath, else the
// volume's publish target, as the built-in workload uses it
// (workloadDir); subPath says which. It fails when the volume is not
// published for the pod, or when the mount has no directory here (a block
// volume, a driver that mounts nothing). The mount-busy fault holds this
// path busy.
func (k *Kubelet) VolumeMountPath(pod *corev1.Pod, volume string) (path string, subPath bool, err error) {
	m, ok := k.volumeDir(pod, volume)
	if !ok {
		return "", false, fmt.Errorf("volume %q of pod %s/%s is not mounted on node %s as a directory (a published filesystem volume of a driver that mounts)",
			volume, pod.Namespace, pod.Name, k.cfg.NodeName)
	}
	path = workloadDir(k.cfg.Dir, pod, volume, m)
	return path, path != m.target, nil
}
