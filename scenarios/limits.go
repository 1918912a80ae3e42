package scenarios

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/csisim/csisim/drivers/endpoint"
)

// Limits checked when a scenario loads, so that bad input is a clear
// file:line error and never a hang, an out-of-memory crash or a run that
// fails half-way for a reason the file already showed.

// MaxFileSize bounds a scenario file and a manifest file it refers to. The
// API server's store takes objects of at most 1.5 MiB (etcd's default
// request limit, --max-request-bytes; etcd-io/etcd
// Documentation/dev-guide/limit.md): a file of a few such objects fits,
// and so does a generated scale scenario of 10,000 claims and pods (about
// 6 MiB, csisim scale); a file of gigabytes (or /dev/zero) is a mistake,
// refused before it is read.
const MaxFileSize = 16 << 20

// MaxDuration bounds every duration in a scenario (a wait's timeout, a
// sleep, a fault's delay): a day of cluster time is more than any Kubernetes
// timeout or retry a scenario may want to outlast, and longer ones are
// typos ("1000h" for "1000s") that would run the simulation for a long
// time of wall time.
const MaxDuration = 24 * time.Hour

// MaxLostAnswers bounds csiLostAnswer's times: each lost answer costs its
// caller a whole timeout (the kubelet's is 2 minutes), so a hundred of them
// on one method is already hours of cluster time in retries; more is a
// driver that never answers, which csiHang says.
const MaxLostAnswers = 100

// MaxCrashesMidCall bounds driverCrashMidCall's times: each crash kills the
// driver process and starts it again (wall time, on every backend), and a
// driver that crashes on every call is one that is down, which driverCrash
// says.
const MaxCrashesMidCall = 20

// defaultDriverName is the driver name a run uses unless told otherwise
// (hostpath.DefaultDriverName; not imported: the parser does not depend on
// the driver).
const defaultDriverName = "hostpath.csisim.io"

// runRootSample stands for a run's root in the longest form it takes: the
// system's temporary directory (with symlinks resolved, as the run uses
// it) and the csisim-run-<random> directory os.MkdirTemp makes there.
func runRootSample() string {
	tmp := os.TempDir()
	if r, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = r
	}
	return filepath.Join(tmp, "csisim-run-4294967295")
}

// nodePluginSocket is where a node's CSI plugin listens in a run rooted
// at root: where node-driver-registrar finds the driver's socket on a real
// node (<kubelet dir>/plugins/<driver>/csi.sock).
func nodePluginSocket(root, node, driver string) string {
	return filepath.Join(root, "nodes", node, "kubelet", "plugins", driver, "csi.sock")
}

// socketPathProblem says why a node's plugin socket would not work in a
// run rooted at root, or "".
func socketPathProblem(root, node, driver string) string {
	sock := nodePluginSocket(root, node, driver)
	if len(sock) <= endpoint.MaxSocketPath {
		return ""
	}
	return fmt.Sprintf("node name %q makes the node plugin's socket path %d bytes long (%s), over the %d a unix socket path can have; use a name at most %d characters long",
		node, len(sock), sock, endpoint.MaxSocketPath, len(node)-(len(sock)-endpoint.MaxSocketPath))
}

// launcherFlags are the flags of csisim's driver that the launcher sets for
// each plugin: where its socket, files and state live in the run's root, and
// who it is. A scenario's driverArgs come after them on the command line,
// so one of these there would move the driver out of the run's directories
// (or make it another plugin); the driver refuses a second value as well.
var launcherFlags = map[string]string{
	"endpoint":    "its socket in the run's directory",
	"root":        "the run's storage directory",
	"state-dir":   "its state directory in the run's directory",
	"node-id":     "the node it serves",
	"mode":        "the plugin it is (controller or node)",
	"driver-name": "the driver name, from cluster.driverName or --driver-name of csisim run",
	"zone":        "the node's zone, from cluster.zones",
}

// driverArgProblem says why a scenario may not pass arg to the driver, or "".
func driverArgProblem(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	if what, ok := launcherFlags[name]; ok {
		return fmt.Sprintf("driver argument %q: csisim sets --%s for each plugin (%s); a scenario cannot change it", arg, name, what)
	}
	return ""
}

// durationProblem says why d is out of bounds for field, or "".
func durationProblem(field string, d time.Duration) string {
	if d > MaxDuration {
		return fmt.Sprintf("%s %s is longer than %s, the longest a scenario may wait or sleep", field, d, MaxDuration)
	}
	return ""
}

// readInputFile reads a scenario or manifest file. It refuses, without
// blocking, what is not a regular file (a directory, a FIFO, a device such
// as /dev/zero) and a file over MaxFileSize, and never reads more than that.
func readInputFile(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO with no writer would otherwise wait for
	// one forever. It does not change how a regular file reads.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, describeMode(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %s, over the %d MiB limit", path, sizeOf(fi.Size()), MaxFileSize>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s grew over the %d MiB limit while being read", path, MaxFileSize>>20)
	}
	return data, nil
}

func describeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + m.String() + ")"
}

func sizeOf(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
