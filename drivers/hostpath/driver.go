// Package hostpath is csisim's own CSI driver. Its volumes live below a
// storage root that the controller process and every node process of one run
// share, so a volume created by the controller can be used on any node. A
// volume is of one of two kinds, chosen by the StorageClass parameter
// "kind":
//
//   - directory (the default): a directory ROOT/volumes/<id> that nodes
//     bind-mount. Capacity is recorded, not enforced.
//   - block: a sparse image file ROOT/volumes/<id>.img of the volume's
//     capacity. ControllerPublishVolume attaches it to a loop device and
//     passes the device to the node in the publish context; the node formats
//     it (once) and mounts it, or hands the device itself to the pod for
//     access type block.
//
// Snapshots are copies below ROOT/snapshots. Each process persists what it
// did in a state directory, so a restarted plugin carries on where it
// stopped; what the kernel knows (mounts, loop devices) is looked up there
// rather than trusted from the state.
package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/csisim/csisim/drivers/endpoint"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
)

// DefaultDriverName is the CSI driver name used unless Config says otherwise.
const DefaultDriverName = "hostpath.csisim.io"

// VendorVersion is reported by GetPluginInfo.
const VendorVersion = "0.1.0"

// Mode selects which CSI services a plugin process serves. Identity is always
// served.
type Mode string

const (
	// ModeAll serves the controller and the node service.
	ModeAll Mode = "all"
	// ModeController serves the controller service only.
	ModeController Mode = "controller"
	// ModeNode serves the node service only.
	ModeNode Mode = "node"
)

// ParseMode turns a --mode value into a Mode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAll, ModeController, ModeNode:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want all, controller or node)", s)
}

func (m Mode) servesController() bool { return m == ModeAll || m == ModeController }
func (m Mode) servesNode() bool       { return m == ModeAll || m == ModeNode }

// Config describes one plugin process.
type Config struct {
	// DriverName is reported by GetPluginInfo; DefaultDriverName if empty.
	DriverName string
	// Endpoint is the unix socket to serve on: unix:///path/csi.sock or an
	// absolute path.
	Endpoint string
	// NodeID identifies the node; required when the node service is served.
	NodeID string
	// Root is the storage backend shared by all processes of one run;
	// volumes live in Root/volumes/<volumeID> (directories) or
	// Root/volumes/<volumeID>.img (block), snapshots in Root/snapshots.
	Root string
	// StateDir is where this process persists its state; see
	// DefaultStateDir.
	StateDir string
	// Mode selects the services to serve; ModeAll if empty.
	Mode Mode
	// MaxVolumesPerNode is reported by NodeGetInfo and enforced by
	// ControllerPublishVolume; 0 means unlimited.
	MaxVolumesPerNode int64
	// Zone is the node's topology zone (the simulator passes the node's
	// topology.kubernetes.io/zone label). NodeGetInfo reports it as the
	// TopologyKeyZone segment; empty means the node reports no zone.
	Zone string
	// CapacityPerZone is the size of the storage pool of every zone (all
	// nodes without a zone share one pool): CreateVolume places volumes
	// in pools and fails with ResourceExhausted when none has room,
	// GetCapacity reports what is left. 0 means unlimited: GetCapacity
	// reports the free space of the file system holding the root.
	CapacityPerZone int64
	// StrictParameters refuses CreateVolume, GetCapacity and
	// ValidateVolumeCapabilities parameters other than kind
	// (InvalidArgument); by default they are passed into the volume
	// context. See parseParameters.
	StrictParameters bool
	// MultiNode lets volumes be used on several nodes at once: the
	// MULTI_NODE_* access modes are supported (and a volume of such a mode
	// may be published to several nodes). Without it the driver supports
	// the SINGLE_NODE_* modes only, as a disk driver does, and refuses the
	// others (see checkCapability).
	MultiNode bool
	// NoTopology: the driver has no VOLUME_ACCESSIBILITY_CONSTRAINTS, its
	// nodes report no topology and its volumes none, as a network storage
	// driver reachable from every node (ceph-csi without domain labels).
	// A StorageClass's allowedTopologies then never reaches it. It
	// excludes Zone.
	NoTopology bool
	// NoAttach: the driver has no PUBLISH_UNPUBLISH_VOLUME, as a file
	// share's or a local volume's: ControllerPublishVolume and
	// ControllerUnpublishVolume are Unimplemented, and raw block volumes,
	// whose loop device ControllerPublishVolume attaches, are refused.
	NoAttach bool
	// NoStage: the node service has no STAGE_UNSTAGE_VOLUME:
	// NodePublishVolume stages the volume itself (nostage.go).
	NoStage bool
	// BugNonIdempotentCreate is a deliberate bug, for teaching and for
	// testing the idempotent-retry and no-leaked-volume invariants: a
	// CreateVolume repeated with the name of a volume the driver has makes
	// another volume with a new ID instead of answering with the one it
	// has, as a driver that keys its volumes by a fresh UUID does. The
	// first volume is then leaked when the caller never heard of it.
	BugNonIdempotentCreate bool
	// Log receives one line per CSI call; os.Stderr if nil.
	Log io.Writer
}

// DefaultStateDir is the state directory used when Config.StateDir is empty:
// a "state" directory beside the root, with one subdirectory per node and
// one for the controller.
func DefaultStateDir(root string, mode Mode, nodeID string) string {
	owner := "controller"
	if mode.servesNode() && nodeID != "" {
		owner = nodeID
	}
	return filepath.Join(filepath.Dir(filepath.Clean(root)), "state", owner)
}

// Driver is one plugin process: the CSI services plus the state behind them.
type Driver struct {
	cfg    Config
	socket string
	// root is cfg.Root with symlinks resolved: the kernel reports loop
	// backing files that way, and they are compared with paths below it.
	root      string
	log       *log.Logger
	mounter   mount.Interface
	exec      utilexec.Interface
	formatter *mount.SafeFormatAndMount
	resizer   *mount.ResizeFs
	// onlineExtResize: the process may grow a mounted ext file system
	// (CAP_SYS_RESOURCE); see resize.go.
	onlineExtResize bool
	// seLinux: the kernel has SELinux enabled, and mounts take its
	// context options (selinux.go).
	seLinux bool

	// mu serialises every state-changing call; the plugin is a test
	// double, so simplicity beats parallelism.
	mu    sync.Mutex
	store *stateStore
	state *state
}

// New validates cfg, loads the persisted state and prepares the backend
// directories. It does not listen yet; see Run.
func New(cfg Config) (*Driver, error) {
	if cfg.DriverName == "" {
		cfg.DriverName = DefaultDriverName
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeAll
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.Root == "" {
		return nil, errors.New("storage root is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("storage root: %w", err)
	}
	cfg.Root = root
	if cfg.Mode.servesNode() {
		if err := checkNodeID(cfg.NodeID); err != nil {
			return nil, fmt.Errorf("node id: %w", err)
		}
	}
	if cfg.MaxVolumesPerNode < 0 {
		return nil, fmt.Errorf("max volumes per node must not be negative, got %d", cfg.MaxVolumesPerNode)
	}
	if cfg.CapacityPerZone < 0 {
		return nil, fmt.Errorf("capacity per zone must not be negative, got %d", cfg.CapacityPerZone)
	}
	if err := checkZone(cfg.Zone); err != nil {
		return nil, err
	}
	if cfg.NoTopology && cfg.Zone != "" {
		return nil, fmt.Errorf("zone %q needs topology: a driver without topology (--no-topology) reports no zone", cfg.Zone)
	}
	socket, err := endpoint.SocketPath(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir(cfg.Root, cfg.Mode, cfg.NodeID)
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}

	// Without systemd: neither a bind mount nor a loop device mount needs
	// a transient systemd scope, and probing for systemd costs an exec
	// per process.
	mounter := mount.NewWithoutSystemd("")
	exec := utilexec.New()
	d := &Driver{
		cfg:             cfg,
		socket:          socket,
		log:             log.New(cfg.Log, logPrefix(cfg), log.Lmsgprefix|log.Ltime|log.Lmicroseconds),
		mounter:         mounter,
		exec:            exec,
		formatter:       &mount.SafeFormatAndMount{Interface: mounter, Exec: exec},
		resizer:         mount.NewResizeFs(exec),
		onlineExtResize: hasCapability(unix.CAP_SYS_RESOURCE),
		seLinux:         hostSELinuxEnabled(),
		store:           &stateStore{path: filepath.Join(cfg.StateDir, stateFileName)},
	}
	if d.state, err = d.store.load(); err != nil {
		return nil, err
	}
	for _, dir := range []string{filepath.Join(cfg.Root, "volumes"), filepath.Join(cfg.Root, "snapshots")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("prepare storage root: %w", err)
		}
	}
	if d.root, err = filepath.EvalSymlinks(cfg.Root); err != nil {
		return nil, fmt.Errorf("resolve storage root: %w", err)
	}
	if cfg.Mode.servesNode() {
		rec := nodeRecord{NodeID: cfg.NodeID, MaxVolumesPerNode: cfg.MaxVolumesPerNode, Zone: cfg.Zone}
		if err := registerNode(d.root, rec); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func logPrefix(cfg Config) string {
	who := string(cfg.Mode)
	if cfg.Mode.servesNode() {
		who += "/" + cfg.NodeID
	}
	return fmt.Sprintf("%s[%s] ", cfg.DriverName, who)
}

// Config returns the configuration with defaults filled in.
func (d *Driver) Config() Config { return d.cfg }

// gracefulStopTimeout bounds how long Run waits for in-flight calls once its
// context is done.
const gracefulStopTimeout = 5 * time.Second

// Run serves the CSI services on the endpoint until ctx is done, then stops
// gracefully and removes the socket.
func (d *Driver) Run(ctx context.Context) error {
	lis, err := endpoint.ListenUnix(d.socket)
	if err != nil {
		return err
	}
	made, _ := os.Stat(d.socket)
	defer removeIfSame(d.socket, made)

	srv := grpc.NewServer(grpc.UnaryInterceptor(d.intercept))
	csi.RegisterIdentityServer(srv, &identityServer{d: d})
	csi.RegisterControllerServer(srv, &controllerServer{d: d})
	csi.RegisterGroupControllerServer(srv, &groupControllerServer{d: d})
	csi.RegisterNodeServer(srv, &nodeServer{d: d})

	serveDone := make(chan struct{})
	stopperDone := make(chan struct{})
	go func() {
		defer close(stopperDone)
		select {
		case <-ctx.Done():
		case <-serveDone:
			return
		}
		graceful := make(chan struct{})
		go func() { srv.GracefulStop(); close(graceful) }()
		select {
		case <-graceful:
		case <-time.After(gracefulStopTimeout):
			srv.Stop()
		}
	}()
	d.log.Printf("serving %s on %s (root %s, state %s)", d.cfg.Mode, d.socket, d.cfg.Root, d.cfg.StateDir)
	err = srv.Serve(lis)
	close(serveDone)
	<-stopperDone
	srv.Stop() // no-op after a graceful stop; frees resources if Serve failed
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve %s: %w", d.socket, err)
	}
	d.log.Printf("stopped")
	return nil
}

// removeIfSame removes the socket file only if it is still the one this
// process made: a successor (a restarted plugin in a new pod sharing the
// directory) may have replaced it, and its socket must stay.
func removeIfSame(path string, made os.FileInfo) {
	now, err := os.Stat(path)
	// An inode number can be reused at once, so the time it was made counts too.
	if err != nil || made == nil || !os.SameFile(now, made) || !now.ModTime().Equal(made.ModTime()) {
		return
	}
	_ = os.Remove(path)
}

// intercept logs every call in one line and refuses the services this
// process does not serve.
func (d *Driver) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	var resp any
	var err error
	switch {
	case (strings.HasPrefix(info.FullMethod, "/csi.v1.Controller/") || strings.HasPrefix(info.FullMethod, "/csi.v1.GroupController/")) && !d.cfg.Mode.servesController():
		err = status.Errorf(codes.Unimplemented, "controller service is not served in %s mode", d.cfg.Mode)
	case strings.HasPrefix(info.FullMethod, "/csi.v1.Node/") && !d.cfg.Mode.servesNode():
		err = status.Errorf(codes.Unimplemented, "node service is not served in %s mode", d.cfg.Mode)
	default:
		resp, err = handler(ctx, req)
	}
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	subject := ""
	if r, ok := req.(interface{ GetVolumeId() string }); ok && r.GetVolumeId() != "" {
		subject = fmt.Sprintf(" volume=%q", r.GetVolumeId())
	} else if r, ok := req.(interface{ GetSnapshotId() string }); ok && r.GetSnapshotId() != "" {
		subject = fmt.Sprintf(" snapshot=%q", r.GetSnapshotId())
	} else if r, ok := req.(interface{ GetName() string }); ok && r.GetName() != "" {
		subject = fmt.Sprintf(" name=%q", r.GetName())
	}
	elapsed := time.Since(start).Round(time.Microsecond)
	if err != nil {
		st := status.Convert(err)
		d.log.Printf("%s%s: %s: %s (%s)", method, subject, st.Code(), st.Message(), elapsed)
	} else {
		d.log.Printf("%s%s: OK (%s)", method, subject, elapsed)
	}
	return resp, err
}

// volumesDir is where the backend keeps the volumes.
func (d *Driver) volumesDir() string { return filepath.Join(d.root, "volumes") }

// snapshotsDir is where the backend keeps the snapshots.
func (d *Driver) snapshotsDir() string { return filepath.Join(d.root, "snapshots") }

// The path helpers below take IDs that passed checkVolumeID or
// checkSnapshotID: a single path element of [a-z0-9-], which cannot leave
// the directory it is joined to. IDs never contain a dot, so an image
// "<id>.img" cannot collide with another volume's directory.

// volumeDir is the backend directory of a directory volume.
func (d *Driver) volumeDir(id string) string { return filepath.Join(d.volumesDir(), id) }

// volumeImage is the backend image file of a block volume.
func (d *Driver) volumeImage(id string) string { return filepath.Join(d.volumesDir(), id+".img") }

// volumePath is where a volume of the given kind lives.
func (d *Driver) volumePath(id string, kind volumeKind) string {
	if kind == kindBlock {
		return d.volumeImage(id)
	}
	return d.volumeDir(id)
}

// snapshotPath is where a snapshot of the given kind lives.
func (d *Driver) snapshotPath(id string, kind volumeKind) string {
	if kind == kindBlock {
		return filepath.Join(d.snapshotsDir(), id+".img")
	}
	return filepath.Join(d.snapshotsDir(), id)
}

// volumeKindOf finds a volume in the backend; ok is false if it does not
// exist. The node plugin has no controller records, so the backend is where
// it learns a volume's kind.
func (d *Driver) volumeKindOf(id string) (kind volumeKind, ok bool, err error) {
	for _, k := range []volumeKind{kindDirectory, kindBlock} {
		fi, err := os.Stat(d.volumePath(id, k))
		switch {
		case err == nil:
			if fi.IsDir() == (k == kindDirectory) {
				return k, true, nil
			}
		case !errors.Is(err, os.ErrNotExist):
			return "", false, status.Errorf(codes.Internal, "look up volume %s: %v", id, err)
		}
	}
	return "", false, nil
}

// volumeKind is what backs a volume; see the package documentation.
type volumeKind string

const (
	kindDirectory volumeKind = "directory"
	kindBlock     volumeKind = "block"
)

// ParameterKind is the CreateVolume parameter (StorageClass parameter)
// that selects the volume kind: "directory" (default) or "block".
const ParameterKind = "kind"

// VolumeContextKind is the volume context key that names the volume kind.
const VolumeContextKind = "hostpath.csisim.io/kind"

// parseParameters reads CreateVolume (and GetCapacity,
// ValidateVolumeCapabilities) parameters. The driver knows one, kind. The
// others it passes on: they are returned as extra and go into the volume
// context of the volume made with them, as many real drivers pass their
// class's parameters (ceph-csi's clusterID and pool, for one), so that a
// StorageClass written for another driver provisions here unchanged. With
// strict (--strict-parameters), an unknown key is refused instead, so that
// a typo in a StorageClass fails loudly rather than silently giving a
// directory volume.
func parseParameters(params map[string]string, strict bool) (kind volumeKind, extra map[string]string, err error) {
	kind = kindDirectory
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch k {
		case ParameterKind:
			switch volumeKind(v) {
			case kindDirectory, kindBlock:
				kind = volumeKind(v)
			default:
				return "", nil, fmt.Errorf("parameter %s=%q: want %q or %q", k, v, kindDirectory, kindBlock)
			}
		case VolumeContextKind:
			// The volume context's own key: a parameter of that name
			// would stand in for the kind there.
			return "", nil, fmt.Errorf("parameter %q is reserved: it is the volume context key naming the volume kind (use %s)", k, ParameterKind)
		default:
			if strict {
				return "", nil, fmt.Errorf("unknown parameter %q (known: %s)", k, ParameterKind)
			}
			if extra == nil {
				extra = map[string]string{}
			}
			extra[k] = v
		}
	}
	return kind, extra, nil
}
