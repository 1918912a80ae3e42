package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
	"github.com/csisim/csisim/trace"
)

func serveCommand() *command {
	return &command{
		name:    "serve",
		summary: "run a simulated cluster for kubectl until Ctrl-C",
		usage:   []string{"csisim serve [flags]"},
		about:   "Runs a simulated cluster and serves its API on 127.0.0.1 for kubectl.",
		signals: true,
		new:     func() subcommand { return &serveCmd{} },
	}
}

// serveCmd is `csisim serve`: a simulated cluster behind an HTTP API
// server on 127.0.0.1 that real kubectl and any client-go program can
// use, until interrupted.
type serveCmd struct {
	invocation
	port          int
	kubeconfig    string
	nodes         string
	seed          uint64
	quiet         bool
	eventTTL      time.Duration
	bare          bool
	driverProfile string
	extraDrivers  extraDriversFlag
	without       string
	deploy        string
	room          *classroomFlags
}

func (c *serveCmd) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.port, "port", 0, "port to listen on, on 127.0.0.1; 0 picks a free one")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "write the kubeconfig here (default: inside the run's temporary directory)")
	fs.StringVar(&c.nodes, "nodes", "node-1", "comma-separated node names")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for UIDs and generated names")
	fs.BoolVar(&c.quiet, "quiet", false, "do not print the timeline")
	fs.DurationVar(&c.eventTTL, "event-ttl", fakekube.DefaultEventTTL, "how long the API server keeps an Event after its last write, as kube-apiserver's --event-ttl")
	fs.BoolVar(&c.bare, "bare", false, "do not create the driver's CSIDriver and default StorageClass "+profile.StorageClassName)
	fs.StringVar(&c.driverProfile, "driver", "", driverUsage+";\nwith a profile, the CSIDriver and the default StorageClass "+profile.StorageClassName+" come from it")
	fs.Var(&c.extraDrivers, "extra-driver", extraDriverUsage)
	fs.StringVar(&c.without, "without", "", "comma-separated simulated components to leave out, for real ones to take their place\n"+
		"(external-provisioner, external-attacher, persistentvolume-binder, attachdetach-controller, default-scheduler,\n"+
		"snapshot-controller, csi-snapshotter);\n"+
		"the controller plugin's socket is printed for sidecars")
	fs.StringVar(&c.deploy, "deploy", "", deployUsage+"; its CSIDriver and StorageClasses replace the driver's default ones")
	c.room = addClassroomFlags(fs)
}

// driverObjects makes the drivers' CSIDrivers and StorageClasses: the
// driver's and its default StorageClass, then each extra driver's.
type driverObjects func(*cluster.Cluster) ([]*storagev1.CSIDriver, []*storagev1.StorageClass)

func (c *serveCmd) Run(ctx context.Context) error {
	cfg, objects, err := c.clusterConfig(ctx)
	if err != nil {
		return err
	}
	sweepDeadRuns(c.stderr)
	if !c.quiet {
		cfg.OnEntry = func(e trace.Entry) { fmt.Fprintln(c.stdout, e.String()) }
	}
	cl, err := cluster.Start(ctx, cfg)
	if err != nil {
		return exitStatus(startFailed(ctx, "the simulated cluster", err, c.stderr))
	}
	if c.bare {
		objects = nil
	}
	clusterprofile.ReportNotApplied(cl, c.stdout)
	s := server{cluster: cl, port: c.port, kubeconfig: c.kubeconfig}
	code := s.serve(ctx, objects, c.stdout, c.stderr)
	if err := cl.Close(); err != nil {
		fmt.Fprintf(c.stderr, "csisim: cleaning up: %v\n", err)
		return errFailed
	}
	fmt.Fprintln(c.stdout, "csisim: stopped; everything the cluster made is removed")
	return exitStatus(code)
}

// clusterConfig is the cluster the flags ask for, and the driver objects
// to create in it.
func (c *serveCmd) clusterConfig(ctx context.Context) (cluster.Config, driverObjects, error) {
	cfg := cluster.Config{Nodes: strings.Split(c.nodes, ",")}
	first := func(cl *cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass) {
		return cluster.DriverObjects(cl.DriverName())
	}
	var p *profile.Profile
	r := profile.Request{Nodes: cfg.Nodes}
	if c.driverProfile != "" {
		var err error
		if cfg, p, err = (driverChoice{profile: c.driverProfile}).clusterConfig(ctx, r, "", c.stderr); err != nil {
			return cfg, nil, usageError(err)
		}
		first = func(cl *cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass) {
			return p.Complete(cl.DriverInfo()).Objects(cl.DriverName(), profile.StorageClassName)
		}
	}
	if err := clusterprofile.AddDrivers(ctx, &cfg, c.extraDrivers, r, clusterprofile.Options{BuildLog: c.stderr}); err != nil {
		return cfg, nil, usageError(err)
	}
	objects := func(cl *cluster.Cluster) ([]*storagev1.CSIDriver, []*storagev1.StorageClass) {
		drv, sc := first(cl)
		drivers, classes := []*storagev1.CSIDriver{drv}, []*storagev1.StorageClass{sc}
		for _, d := range c.extraDrivers {
			ep, _ := profiles.Get(d.Profile) // AddDrivers found it
			info, _ := cl.DriverInfoOf(d.Name)
			drv, sc := ep.Complete(info).ExtraObjects(d.Name)
			drivers, classes = append(drivers, drv), append(classes, sc)
		}
		return drivers, classes
	}
	cfg.Seed, cfg.Realtime, cfg.EventTTL = c.seed, true, c.eventTTL
	// People apply DaemonSets to a served cluster: its controller runs.
	cfg.DaemonSets = true
	if c.deploy != "" {
		if p == nil {
			var err error
			if p, err = (driverChoice{}).resolve(); err != nil {
				return cfg, nil, usageError(err)
			}
		}
		if err := clusterprofile.Deploy(&cfg, p, c.deploy, c.stdout); err != nil {
			return cfg, nil, usageError(err)
		}
		// The CSIDriver and the StorageClasses are the manifests'.
		objects = nil
	}
	if c.without != "" {
		cfg.Without = strings.Split(c.without, ",")
	}
	if err := c.room.apply(&cfg); err != nil {
		return cfg, nil, usageError(err)
	}
	// Without --driver, csisim's own driver, which mounts for real.
	if err := checkRoot(!cfg.Mock && (p == nil || p.Has(profile.RealMounts)), euid()); err != nil {
		return cfg, nil, err
	}
	return cfg, objects, nil
}

// server serves a started cluster's API, its timeline page and its fault
// endpoint on 127.0.0.1.
type server struct {
	cluster    *cluster.Cluster
	port       int
	kubeconfig string // "" for one in the run's directory

	addr string // where it listened
}

// serve serves the cluster's API until ctx ends; objects, if not nil,
// are the driver's CSIDriver and StorageClass to create first. It
// returns the exit code.
func (s *server) serve(ctx context.Context, objects driverObjects, stdout, stderr io.Writer) int {
	c := s.cluster
	if objects != nil {
		if err := createDriverObjects(ctx, c, objects); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 1
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	s.addr = l.Addr().String()
	handler := withTimeline(withFaultEndpoint(c, c.API()), c.Recorder(), c.Root())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	if s.kubeconfig == "" {
		s.kubeconfig = c.Root() + "/kubeconfig"
	}
	created, err := writeKubeconfig(s.kubeconfig, "http://"+s.addr, filepath.Base(c.Root()))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		_ = srv.Close()
		return 1
	}
	if created {
		defer os.Remove(s.kubeconfig)
	}
	s.printBanner(stdout)

	code := 0
	select {
	case <-ctx.Done():
		// Not silently: tearing the nodes' mounts and the driver down
		// takes a moment.
		fmt.Fprintln(stdout, "csisim: interrupted: stopping the cluster")
	case err := <-served:
		fmt.Fprintf(stderr, "csisim: serving: %v\n", err)
		code = 1
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Watches never end on their own: close what Shutdown cannot drain.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	return code
}

// printBanner says where everything is, once the cluster is up.
func (s *server) printBanner(stdout io.Writer) {
	fmt.Fprintf(stdout, "csisim: API server on http://%s\ncsisim: kubeconfig %s\ncsisim: CSI controller plugin at %s\ncsisim: try: export KUBECONFIG=%s; kubectl get nodes,sc,csidrivers\ncsisim: Ctrl-C stops the cluster and removes everything it made\n",
		s.addr, s.kubeconfig, s.cluster.ControllerEndpoint(), s.kubeconfig)
	fmt.Fprintf(stdout, "csisim: timeline at http://%s%s\n", s.addr, timelinePath)
}

func createDriverObjects(ctx context.Context, c *cluster.Cluster, objects driverObjects) error {
	cs, err := kubernetes.NewForConfig(c.API().RESTConfig("csisim-setup"))
	if err != nil {
		return err
	}
	drivers, classes := objects(c)
	for _, drv := range drivers {
		if _, err := cs.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CSIDriver %s: %w", drv.Name, err)
		}
	}
	for _, sc := range classes {
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for server to path and says whether
// it created the file (and so should remove it on exit). Its cluster, user
// and context are named after the run (its directory, csisim-run-N), so
// that the kubeconfigs of several runs merge (KUBECONFIG=a:b) into
// contexts that do not shadow each other.
func writeKubeconfig(path, server, run string) (bool, error) {
	_, statErr := os.Stat(path)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[run] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos[run] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[run] = &clientcmdapi.Context{Cluster: run, AuthInfo: run, Namespace: "default"}
	cfg.CurrentContext = run
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return false, fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return os.IsNotExist(statErr), nil
}
