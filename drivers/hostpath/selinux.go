package hostpath

// SELinux context mount options. A kubelet on a node whose kernel has
// SELinux enabled adds context="<label>" to the mount flags of
// NodeStageVolume and NodePublishVolume for a driver whose CSIDriver says
// seLinuxMount: true (kubernetes pkg/volume/csi/csi_attacher.go and
// csi_mounter.go). The simulator runs such nodes on this machine's kernel,
// which may have no SELinux: there the kernel refuses the option (an
// unknown mount option to the file system, EINVAL), a failure that no
// real node would see, since a real kubelet on such a kernel never sends
// it. So the plugin records the flags as asked (its state, compared on a
// repeated call, keeps them) and mounts with the SELinux options only
// where the kernel has SELinux; elsewhere it mounts without them, as the
// volume would be mounted on an SELinux node save for its label.

import (
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// seLinuxFS is where selinuxfs is mounted when the kernel has SELinux
// enabled (go-selinux's GetEnabled looks there first).
const seLinuxFS = "/sys/fs/selinux"

// seLinuxMountOptions are the mount(8) options that only SELinux takes.
var seLinuxMountOptions = []string{"context=", "fscontext=", "defcontext=", "rootcontext="}

// hostSELinuxEnabled says whether this kernel has SELinux enabled: its
// file system is mounted at seLinuxFS.
func hostSELinuxEnabled() bool {
	var st unix.Statfs_t
	return unix.Statfs(seLinuxFS, &st) == nil && uint32(st.Type) == unix.SELINUX_MAGIC
}

// isSELinuxMountOption says whether a mount flag is an SELinux one.
func isSELinuxMountOption(flag string) bool {
	return slices.ContainsFunc(seLinuxMountOptions, func(p string) bool { return strings.HasPrefix(flag, p) })
}

// hostMountOptions are the flags a mount is made with on this host: all of
// them if the kernel has SELinux (seLinux), else all but the SELinux ones.
func hostMountOptions(flags []string, seLinux bool) []string {
	if seLinux || !slices.ContainsFunc(flags, isSELinuxMountOption) {
		return flags
	}
	return slices.DeleteFunc(slices.Clone(flags), isSELinuxMountOption)
}
