// Package realkube starts and stops a real Kubernetes control plane —
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler at
// v1.37.2 — bound to 127.0.0.1 only, for tests that want the upstream
// controllers instead of csisim's simulated ones.
//
// The binaries are not part of the repository: `make realkube-bins`
// (go run ./realkube/build) compiles them from the Go module proxy into a
// versioned cache, by default BinDir(). Available reports which are missing,
// so tests can skip when they are not there.
//
// The components — kube-controller-manager, kube-scheduler, and whatever
// the caller runs with ComponentKubeconfigPath or NodeKubeconfig (sidecars,
// kubelets) — reach kube-apiserver through a reverse proxy of csisim's
// (package apiproxy), which injects the API server faults; the admin
// configuration (RESTConfig, KubeconfigPath), for a harness that observes
// the cluster, goes to kube-apiserver directly, past the faults.
//
// Everything a cluster writes (certificates, etcd data, kubeconfigs, logs)
// lies below Config.RootDir; Stop ends every process Start started, by PID.
package realkube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/internal/cachedir"
	"github.com/csisim/csisim/internal/freeport"
	"github.com/csisim/csisim/realkube/apiproxy"
	"github.com/csisim/csisim/timing"
)

// KubeVersion is the Kubernetes release the binaries are built from.
const KubeVersion = "v1.37.2"

// Binary names.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	CSIProvisioner        = "csi-provisioner"
	CSIAttacher           = "csi-attacher"
	CSIResizer            = "csi-resizer"
	SnapshotController    = "snapshot-controller"
	CSISnapshotter        = "csi-snapshotter"
	// KubeControllerManagerTimed is kube-controller-manager with the
	// attach/detach controller's wait for unmount taken from the
	// environment (realkube/build): what Start runs when Config.Timing
	// scales that wait, which v1.37 has no flag for.
	KubeControllerManagerTimed = "kube-controller-manager-timed"
)

// ControlPlaneBinaries are the binaries Start needs.
var ControlPlaneBinaries = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler}

// SidecarBinaries are the CSI sidecars the build also produces.
var SidecarBinaries = []string{CSIProvisioner, CSIAttacher, CSIResizer, SnapshotController, CSISnapshotter}

// CacheDir is the versioned cache the build writes to:
// ${CSISIM_CACHE:-$HOME/.cache/csisim}/realkube/v1.37.2.
func CacheDir() string { return filepath.Join(cachedir.Root(), "realkube", KubeVersion) }

// BinDir is the default binary directory, CacheDir()/bin.
func BinDir() string { return filepath.Join(CacheDir(), "bin") }

// Available returns nil if binDir holds an executable for each of names
// (the control plane if names is empty), otherwise an error naming the
// missing ones and how to build them.
func Available(binDir string, names ...string) error {
	if len(names) == 0 {
		names = ControlPlaneBinaries
	}
	var missing []string
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(binDir, n))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("realkube: %s missing in %s; build them with `make realkube-bins REALKUBE_ONLY=%s`",
			strings.Join(missing, ", "), binDir, strings.Join(missing, ","))
	}
	return nil
}

// Config describes a control plane to start.
type Config struct {
	// BinDir holds the binaries; default BinDir().
	BinDir string
	// RootDir receives everything the cluster writes (pki/, etcd/, logs/,
	// kubeconfigs). Required; created if missing. Typically a runroot path.
	RootDir string
	// ControllersFlag is kube-controller-manager's --controllers, e.g.
	// "*,-attachdetach" to leave attach/detach to a simulated controller.
	// Default "*".
	ControllersFlag string
	// Log receives every component's output, each line prefixed with
	// [component]. The output also always goes to RootDir/logs/<name>.log.
	Log io.Writer
	// SnapshotCRDDir holds the VolumeSnapshot (and group snapshot) CRDs to
	// install; default: config/crd of
	// github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0 in the
	// Go module cache (SnapshotCRDDir()).
	SnapshotCRDDir string
	// SkipSnapshotCRDs leaves the snapshot CRDs out.
	SkipSnapshotCRDs bool
	// ExtraArgs are appended to a component's flags, keyed by binary name,
	// e.g. {"kube-controller-manager": {"--pvclaimbinder-sync-period=1s"}}.
	ExtraArgs map[string][]string
	// StartTimeout bounds the whole start-up; default 2 minutes.
	StartTimeout time.Duration
	// APIComponent names the component a request to the API proxy comes
	// from, for the faults that strike one component; default
	// apiproxy.FirstWord.
	APIComponent func(apiproxy.Client) string
	// Timing is the cluster's timing of node loss (package timing): when
	// it is scaled, kube-apiserver and kube-controller-manager get its
	// flags, and kube-controller-manager runs from
	// KubeControllerManagerTimed with the attach/detach controller's wait
	// for unmount. The zero value is v1.37's.
	Timing timing.Timing
}

// Binaries are the binaries a control plane of cfg needs: the timed
// controller manager instead of the plain one when its timing is scaled.
func (cfg Config) Binaries() []string {
	if !cfg.Timing.Scaled() {
		return ControlPlaneBinaries
	}
	return []string{Etcd, KubeAPIServer, KubeControllerManagerTimed, KubeScheduler}
}

// Cluster is a running control plane.
type Cluster struct {
	cfg        Config
	pki        *pki
	kubeconfig string
	restConfig *rest.Config
	// proxy stands between the components and kube-apiserver;
	// componentKubeconfig is the admin's kubeconfig through it.
	proxy               *apiproxy.Proxy
	componentKubeconfig string
	ports               ports
	procs               []*process // in start order

	stopOnce sync.Once
	stopErr  error
}

type ports struct {
	etcdClient, etcdPeer, apiserver, kcm, scheduler int
}

// Start starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler on free 127.0.0.1 ports, waits until each is healthy and
// installs the snapshot CRDs. ctx bounds start-up only: once Start has
// returned, the processes run until Stop (or until this process dies).
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg, err = cfg.prepared(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	progress := progressLog(cfg.Log)

	c = &Cluster{cfg: cfg}
	// A failed start stops what it started: the cluster is kept apart
	// from the result, which `return nil, err` has already cleared.
	started := c
	defer func() {
		if err != nil {
			_ = started.Stop()
			c = nil
		}
	}()
	if err := c.prepareAccess(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	progress("etcd healthy")
	adminHTTP, err := c.startAPIServer(ctx)
	if err != nil {
		return nil, err
	}
	progress("kube-apiserver ready")
	if err := c.startControllers(ctx, adminHTTP, progress); err != nil {
		return nil, err
	}
	return c, nil
}

// prepared is cfg with its defaults filled in and RootDir absolute and
// made, once the binaries are known to be there.
func (cfg Config) prepared() (Config, error) {
	if cfg.RootDir == "" {
		return cfg, errors.New("realkube: Config.RootDir is required")
	}
	if cfg.BinDir == "" {
		cfg.BinDir = BinDir()
	}
	if cfg.ControllersFlag == "" {
		cfg.ControllersFlag = "*"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if err := Available(cfg.BinDir, cfg.Binaries()...); err != nil {
		return cfg, err
	}
	root, err := filepath.Abs(cfg.RootDir)
	if err != nil {
		return cfg, err
	}
	cfg.RootDir = root
	for _, d := range []string{"", "logs", "etcd", "apiserver"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return cfg, fmt.Errorf("realkube: %w", err)
		}
	}
	return cfg, nil
}

// progressLog returns what tells log (if set) how far start-up has come,
// and after how long.
func progressLog(log io.Writer) func(what string) {
	began := time.Now()
	return func(what string) {
		if log != nil {
			logMu.Lock()
			fmt.Fprintf(log, "[realkube] %s after %s\n", what, time.Since(began).Round(time.Millisecond))
			logMu.Unlock()
		}
	}
}

// prepareAccess makes what the components reach each other with: the
// certificates, the ports and the kubeconfigs.
func (c *Cluster) prepareAccess() error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.cfg.RootDir, "pki")); err != nil {
		return fmt.Errorf("realkube: certificates: %w", err)
	}
	p, err := freeport.Loopback(5)
	if err != nil {
		return fmt.Errorf("realkube: free ports: %w", err)
	}
	c.ports = ports{etcdClient: p[0], etcdPeer: p[1], apiserver: p[2], kcm: p[3], scheduler: p[4]}
	if err := c.startAPIProxy(); err != nil {
		return fmt.Errorf("realkube: the API proxy: %w", err)
	}
	if err := c.writeKubeconfigs(); err != nil {
		return fmt.Errorf("realkube: kubeconfigs: %w", err)
	}
	return nil
}

// startEtcd starts etcd and waits until it is healthy.
func (c *Cluster) startEtcd(ctx context.Context) error {
	etcd, err := c.start(Etcd, c.etcdArgs())
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d/health", c.ports.etcdClient)
	return waitHealthy(ctx, etcd, http.DefaultClient, etcdURL, func(b string) bool { return strings.Contains(b, `"health":"true"`) })
}

// startAPIServer starts kube-apiserver and waits until it is ready; it
// returns the admin's HTTP client for the health checks that follow.
func (c *Cluster) startAPIServer(ctx context.Context) (*http.Client, error) {
	apiserver, err := c.start(KubeAPIServer, c.apiserverArgs())
	if err != nil {
		return nil, err
	}
	adminHTTP, err := c.adminHTTPClient()
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, apiserver, adminHTTP, c.restConfig.Host+"/readyz", okBody); err != nil {
		return nil, err
	}
	return adminHTTP, nil
}

// startControllers starts kube-controller-manager and kube-scheduler and
// waits until they run, while the snapshot CRDs go in.
func (c *Cluster) startControllers(ctx context.Context, adminHTTP *http.Client, progress func(string)) error {
	kcm, err := c.startKCM()
	if err != nil {
		return err
	}
	sched, err := c.start(KubeScheduler, c.schedulerArgs())
	if err != nil {
		return err
	}
	crdErr := make(chan error, 1)
	go func() {
		if c.cfg.SkipSnapshotCRDs {
			crdErr <- nil
			return
		}
		crdErr <- c.installSnapshotCRDs(ctx)
	}()
	var errs []error
	if err := c.waitControllerManager(ctx, kcm, adminHTTP); err != nil {
		errs = append(errs, err)
	} else {
		progress("kube-controller-manager's controllers running")
	}
	if err := waitHealthy(ctx, sched, adminHTTP, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.scheduler), okBody); err != nil {
		errs = append(errs, err)
	} else {
		progress("kube-scheduler healthy")
	}
	if err := <-crdErr; err != nil {
		errs = append(errs, fmt.Errorf("realkube: snapshot CRDs: %w", err))
	} else if !c.cfg.SkipSnapshotCRDs {
		progress("snapshot CRDs established")
	}
	return errors.Join(errs...)
}

// waitControllerManager waits until kube-controller-manager's controllers
// run. Its /healthz is ok as soon as it serves; its controllers start
// seconds later (each gets its own service-account token first) and only
// then add their checks to /healthz?verbose. Waiting for those means the
// controllers act as soon as the caller goes on.
func (c *Cluster) waitControllerManager(ctx context.Context, kcm *process, adminHTTP *http.Client) error {
	ready := func(body string) bool {
		return strings.Contains(body, "healthz check passed") &&
			(!enablesControllers(c.cfg.ControllersFlag) || strings.Contains(body, "-controller ok"))
	}
	return waitHealthy(ctx, kcm, adminHTTP, fmt.Sprintf("https://127.0.0.1:%d/healthz?verbose", c.ports.kcm), ready)
}

// RestartControllerManager stops kube-controller-manager (SIGTERM, as a
// static pod's restart does) and starts it again with the same flags, then
// waits until its controllers run: they start from what they list, with
// nothing kept in memory — the attach/detach controller, for one, rebuilds
// its actual state of the world from the Nodes and VolumeAttachments.
func (c *Cluster) RestartControllerManager(ctx context.Context) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == KubeControllerManager })
	if i < 0 {
		return errors.New("realkube: kube-controller-manager is not running")
	}
	if err := c.procs[i].stop(10 * time.Second); err != nil {
		return fmt.Errorf("realkube: stopping kube-controller-manager: %w", err)
	}
	c.procs = slices.Delete(c.procs, i, i+1)
	kcm, err := c.startKCM()
	if err != nil {
		return err
	}
	adminHTTP, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	return c.waitControllerManager(ctx, kcm, adminHTTP)
}

// RESTConfig returns a copy of the admin client configuration (client
// certificate with O=system:masters).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// KubeconfigPath is the admin kubeconfig below RootDir, to kube-apiserver
// directly: what a harness observes the cluster with.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// ComponentKubeconfigPath is the admin kubeconfig through the API proxy:
// what a component the caller runs (a sidecar) reaches the API server
// with, so that the API server faults strike it.
func (c *Cluster) ComponentKubeconfigPath() string { return c.componentKubeconfig }

// ComponentRESTConfig is RESTConfig through the API proxy, for a component
// the caller runs in its own process (a simulated kubelet).
func (c *Cluster) ComponentRESTConfig() *rest.Config {
	cfg := c.RESTConfig()
	cfg.Host = c.proxy.URL()
	return cfg
}

// APIProxy is the proxy between the components and kube-apiserver, which
// injects the API server faults.
func (c *Cluster) APIProxy() *apiproxy.Proxy { return c.proxy }

// RootDir is the directory everything of this cluster lies below.
func (c *Cluster) RootDir() string { return c.cfg.RootDir }

// Host is the API server's URL, https://127.0.0.1:<port>.
func (c *Cluster) Host() string { return c.restConfig.Host }

// CAFile is the cluster CA certificate, which signed the serving and
// client certificates.
func (c *Cluster) CAFile() string { return c.pki.caCert }

// PIDs returns the process IDs of the components started so far, by name.
func (c *Cluster) PIDs() map[string]int {
	m := map[string]int{}
	for _, p := range c.procs {
		m[p.name] = p.pid()
	}
	return m
}

// LogPath is where the named component's output is written.
func (c *Cluster) LogPath(name string) string {
	return filepath.Join(c.cfg.RootDir, "logs", name+".log")
}

// Stop ends every process Start started, in reverse order: SIGTERM, then
// SIGKILL after a grace period. It is safe to call more than once. It does
// not remove RootDir; that is the caller's.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		// Controllers first (together), then the API server, then etcd.
		var front, apiserver, etcd []*process
		for _, p := range c.procs {
			switch p.name {
			case Etcd:
				etcd = append(etcd, p)
			case KubeAPIServer:
				apiserver = append(apiserver, p)
			default:
				front = append(front, p)
			}
		}
		for i, group := range [][]*process{front, apiserver, etcd} {
			if i == 1 && c.proxy != nil {
				// Nothing reaches the API server through the proxy now.
				errs = append(errs, c.proxy.Close())
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, p := range group {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := p.stop(10 * time.Second); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (c *Cluster) start(name string, args []string) (*process, error) {
	return c.startFrom(name, name, nil, args)
}

// startKCM starts kube-controller-manager: from KubeControllerManagerTimed
// with the wait for unmount in its environment when the timing is scaled.
func (c *Cluster) startKCM() (*process, error) {
	if !c.cfg.Timing.Scaled() {
		return c.start(KubeControllerManager, c.kcmArgs())
	}
	env := []string{timing.MaxWaitForUnmountEnv + "=" + c.cfg.Timing.MaxWaitForUnmount().String()}
	return c.startFrom(KubeControllerManager, KubeControllerManagerTimed, env, c.kcmArgs())
}

// startFrom starts the component name from binary bin, with env added to
// this process's environment.
func (c *Cluster) startFrom(name, bin string, env, args []string) (*process, error) {
	args = append(args, c.cfg.ExtraArgs[name]...)
	p, err := startProcess(name, filepath.Join(c.cfg.BinDir, bin), c.cfg.RootDir, filepath.Join(c.cfg.RootDir, "logs"), args, env, c.cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("realkube: %w", err)
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func okBody(b string) bool { return strings.TrimSpace(b) == "ok" }

// waitHealthy polls url until it answers 200 with a body ok accepts, p
// exits, or ctx ends.
func waitHealthy(ctx context.Context, p *process, client *http.Client, url string, ok func(string) bool) error {
	start := time.Now()
	var last string
	for {
		if p.exited() {
			return fmt.Errorf("realkube: %w", p.exitError())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && ok(string(body)) {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, lastLines(string(body), 10))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("realkube: %s not healthy at %s after %s (last: %s)\n%s",
				p.name, url, time.Since(start).Round(time.Millisecond), last, p.logTail(30))
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
