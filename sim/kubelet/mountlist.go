package kubelet

// What the kubelets left mounted, for the run's clean-up checks; no
// upstream counterpart (a real node lists /proc/self/mountinfo the same
// way).

import (
	"fmt"
	"slices"

	"github.com/moby/sys/mountinfo"
)

// Mounts lists the mount points below the kubelet directories dirs, as this
// process's mount namespace sees them, sorted: what the kubelets (and the
// node plugins for them) have left mounted.
func Mounts(dirs ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return nil, fmt.Errorf("listing the mounts under %s: %w", dir, err)
		}
		for _, m := range infos {
			if m.Mountpoint != dir {
				out = append(out, m.Mountpoint)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
