package main

import (
	"errors"
	"os"
)

// errNeedsRoot: a driver that mounts for real needs root. Without it the
// first NodeStageVolume fails with "operation not permitted", which a run
// shows only as a wait timing out steps later; so it is refused before
// anything starts, with the two ways out.
var errNeedsRoot = errors.New("this driver mounts volumes for real, which needs root: run csisim as root (sudo), " +
	"or use the in-memory mock driver, which needs no root (--mock-driver, or --driver mock)")

// checkRoot refuses a driver that mounts for real when csisim runs as a
// user other than root (euid, os.Geteuid()).
func checkRoot(realMounts bool, euid int) error {
	if realMounts && euid != 0 {
		return errNeedsRoot
	}
	return nil
}

// euid is the effective user ID csisim runs as.
func euid() int { return os.Geteuid() }
