package hostpath

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Main runs the driver as the `csisim driver` subcommand. args are the
// arguments after the subcommand name, i.e. flags only:
//
//	csisim driver --endpoint unix:///run/csi.sock --node-id n1 --root /srv/backend
//
// becomes Main([]string{"--endpoint", ..., "--root", "/srv/backend"}, ...).
// SIGTERM and SIGINT stop it gracefully. It returns the process exit code: 0
// after a clean stop or --help, 2 for bad usage, 1 for any other failure.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim driver", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Main reports usage and errors itself, see below
	var (
		cfg  Config
		mode string
	)
	// Where the driver keeps its files and who it is may be given once
	// only: a second value, appended to a launcher's command line (a
	// scenario's driverArgs), would otherwise silently move the driver's
	// root or state out of the directories the launcher cleans up.
	cfg.DriverName, mode = DefaultDriverName, string(ModeAll)
	fs.Var(once(&cfg.Endpoint), "endpoint", "unix socket to serve CSI on, e.g. unix:///run/csi/csi.sock (required)")
	fs.Var(once(&cfg.NodeID), "node-id", "node ID reported by NodeGetInfo (required when --mode serves the node service)")
	fs.Var(once(&cfg.Root), "root", "storage backend root shared by all plugin processes of a run; volumes live in ROOT/volumes/<id> (kind directory) or ROOT/volumes/<id>.img (kind block), snapshots in ROOT/snapshots (required)")
	fs.Var(once(&cfg.StateDir), "state-dir", "where this process persists its state (default: <dir of root>/state/<node-id or \"controller\">)")
	fs.Var(once(&mode), "mode", "services to serve besides identity: all, controller or node")
	fs.Var(once(&cfg.DriverName), "driver-name", "CSI driver name reported by GetPluginInfo")
	fs.Int64Var(&cfg.MaxVolumesPerNode, "max-volumes-per-node", 0, "volume limit reported by NodeGetInfo and enforced by ControllerPublishVolume; 0 means unlimited")
	fs.StringVar(&cfg.Zone, "zone", "", "the node's zone, reported by NodeGetInfo as topology segment "+TopologyKeyZone+" (the node's topology.kubernetes.io/zone label); empty: no zone")
	fs.BoolVar(&cfg.StrictParameters, "strict-parameters", false, "refuse StorageClass parameters other than kind (InvalidArgument), so that a typo fails loudly; by default they are accepted and passed into the volume context, as many drivers pass theirs")
	fs.BoolVar(&cfg.MultiNode, "multi-node", false, "support the MULTI_NODE_* access modes (ReadWriteMany, ReadOnlyMany): a volume may be published to several nodes at once; by default only the SINGLE_NODE_* modes are supported and the others refused, as a disk driver refuses them")
	fs.BoolVar(&cfg.NoTopology, "no-topology", false, "declare no VOLUME_ACCESSIBILITY_CONSTRAINTS: nodes report no topology and volumes none, as a network storage driver reachable from every node; a StorageClass's allowedTopologies then does not reach the driver (excludes --zone)")
	fs.BoolVar(&cfg.NoAttach, "no-attach", false, "declare no PUBLISH_UNPUBLISH_VOLUME, as a file share or local volume driver: ControllerPublishVolume is Unimplemented, and volumes of kind block (whose loop device it attaches) are refused")
	fs.BoolVar(&cfg.NoStage, "no-stage", false, "declare no STAGE_UNSTAGE_VOLUME: NodeStageVolume is Unimplemented, and NodePublishVolume stages the volume itself below the state directory, unstaging it after its last NodeUnpublishVolume on the node")
	fs.BoolVar(&cfg.BugNonIdempotentCreate, "bug-non-idempotent-create", false, "a deliberate bug, for teaching and for testing invariants: a CreateVolume repeated with the name of a volume the driver has makes another volume with a new ID instead of answering with the one it has (not idempotent); when the caller never heard of the first, it is leaked. csisim's idempotent-retry and no-leaked-volume invariants catch it")
	fs.Func("capacity", "storage pool size of each zone, e.g. 10Gi: CreateVolume fails with ResourceExhausted when no pool has room, GetCapacity reports what is left (default: unlimited, GetCapacity reports the root's free space)", func(s string) error {
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return err
		}
		if q.Sign() < 0 {
			return fmt.Errorf("must not be negative")
		}
		cfg.CapacityPerZone = q.Value()
		return nil
	})
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: csisim driver [flags]\n\nRuns csisim's hostpath CSI driver.\n\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			kind, text := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "  --%s %s\n    \t%s", f.Name, kind, text)
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return 0
		}
		return usageError(stderr, "%v", err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q", fs.Arg(0))
	}
	var err error
	if cfg.Mode, err = ParseMode(mode); err != nil {
		return usageError(stderr, "--mode: %v", err)
	}
	for _, req := range []struct{ name, value string }{{"endpoint", cfg.Endpoint}, {"root", cfg.Root}} {
		if req.value == "" {
			return usageError(stderr, "--%s is required", req.name)
		}
	}
	if cfg.Mode.servesNode() && cfg.NodeID == "" {
		return usageError(stderr, "--node-id is required in %s mode", cfg.Mode)
	}
	cfg.Log = stderr

	d, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "csisim driver: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "csisim driver: %v\n", err)
		return 1
	}
	return 0
}

// onceFlag is a string flag that may be given at most once.
type onceFlag struct {
	p   *string
	set bool
}

func once(p *string) *onceFlag { return &onceFlag{p: p} }

func (f *onceFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return *f.p
}

func (f *onceFlag) Set(s string) error {
	if f.set {
		return fmt.Errorf("given twice (%q, then %q): it may be given once only", *f.p, s)
	}
	*f.p, f.set = s, true
	return nil
}

// usageError reports bad usage in one line, which stays readable when a
// launcher quotes the last lines of a failed driver's output, and returns
// the exit code for it.
func usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "csisim driver: %s (see --help)\n", fmt.Sprintf(format, args...))
	return 2
}
