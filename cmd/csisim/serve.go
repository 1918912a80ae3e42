package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// serve is `csisim serve`: a simulated cluster behind an HTTP API server on
// 127.0.0.1 that real kubectl and any client-go program can use, until
// interrupted.
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "port to listen on, on 127.0.0.1; 0 picks a free one")
	kubeconfig := fs.String("kubeconfig", "", "write the kubeconfig here (default: inside the run's temporary directory)")
	nodes := fs.String("nodes", "node-1", "comma-separated node names")
	seed := fs.Uint64("seed", 1, "seed for UIDs and generated names")
	quiet := fs.Bool("quiet", false, "do not print the timeline")
	eventTTL := fs.Duration("event-ttl", fakekube.DefaultEventTTL, "how long the API server keeps an Event after its last write, as kube-apiserver's --event-ttl")
	bare := fs.Bool("bare", false, "do not create the driver's CSIDriver and default StorageClass")
	driverProfile := fs.String("driver", "", driverUsage+";\nwith a profile, the CSIDriver and the default StorageClass "+profile.StorageClassName+" come from it")
	without := fs.String("without", "", "comma-separated simulated components to leave out, for real ones to take their place\n"+
		"(external-provisioner, external-attacher, persistentvolume-binder, attachdetach-controller, default-scheduler,\n"+
		"snapshot-controller, csi-snapshotter);\n"+
		"the controller plugin's socket is printed for sidecars")
	room := addClassroomFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim serve [flags]\n\nRuns a simulated cluster and serves its API on 127.0.0.1 for kubectl.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sweepDeadRuns(stderr)

	cfg := cluster.Config{Nodes: strings.Split(*nodes, ",")}
	objects := func(c *cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass) {
		return cluster.DriverObjects(c.DriverName())
	}
	if *driverProfile != "" {
		var p *profile.Profile
		var err error
		if cfg, p, err = (driverChoice{profile: *driverProfile}).clusterConfig(ctx, profile.Request{Nodes: cfg.Nodes}, "", stderr); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 2
		}
		objects = func(c *cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass) {
			return p.Complete(c.DriverInfo()).Objects(c.DriverName(), profile.StorageClassName)
		}
	}
	cfg.Seed, cfg.Realtime, cfg.EventTTL = *seed, true, *eventTTL
	if *without != "" {
		cfg.Without = strings.Split(*without, ",")
	}
	if err := room.apply(&cfg); err != nil {
		fmt.Fprintf(stderr, "csisim serve: %v\n", err)
		return 2
	}
	if !*quiet {
		cfg.OnEntry = func(e trace.Entry) { fmt.Fprintln(stdout, e.String()) }
	}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return startFailed(ctx, "the simulated cluster", err, stderr)
	}
	if *bare {
		objects = nil
	}
	code := serveCluster(ctx, c, *port, *kubeconfig, objects, stdout, stderr)
	if err := c.Close(); err != nil {
		fmt.Fprintf(stderr, "csisim: cleaning up: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// serveCluster serves c's API until ctx ends; objects, if not nil, are
// the driver's CSIDriver and StorageClass to create first.
func serveCluster(ctx context.Context, c *cluster.Cluster, port int, kubeconfig string,
	objects func(*cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass), stdout, stderr io.Writer) int {
	if objects != nil {
		if err := createDriverObjects(ctx, c, objects); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 1
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: withTimeline(withFaultEndpoint(c, c.API()), c.Recorder(), c.Root()), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	if kubeconfig == "" {
		kubeconfig = c.Root() + "/kubeconfig"
	}
	created, err := writeKubeconfig(kubeconfig, "http://"+l.Addr().String(), filepath.Base(c.Root()))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		_ = srv.Close()
		return 1
	}
	if created {
		defer os.Remove(kubeconfig)
	}
	fmt.Fprintf(stdout, "csisim: API server on http://%s\ncsisim: kubeconfig %s\ncsisim: CSI controller plugin at %s\ncsisim: try: export KUBECONFIG=%s; kubectl get nodes,sc,csidrivers\ncsisim: Ctrl-C stops the cluster and removes everything it made\n",
		l.Addr(), kubeconfig, c.ControllerEndpoint(), kubeconfig)
	fmt.Fprintf(stdout, "csisim: timeline at http://%s%s\n", l.Addr(), timelinePath)

	code := 0
	select {
	case <-ctx.Done():
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

func createDriverObjects(ctx context.Context, c *cluster.Cluster, objects func(*cluster.Cluster) (*storagev1.CSIDriver, *storagev1.StorageClass)) error {
	cs, err := kubernetes.NewForConfig(c.API().RESTConfig("csisim-setup"))
	if err != nil {
		return err
	}
	drv, sc := objects(c)
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CSIDriver %s: %w", drv.Name, err)
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
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
