package realkube

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The command lines of the control plane's components: each listens on
// 127.0.0.1 only, at the ports Start chose, and writes below RootDir.

func (c *Cluster) etcdArgs() []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	return []string{
		"--name=realkube",
		"--data-dir=" + filepath.Join(c.cfg.RootDir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=realkube=" + peer,
		"--initial-cluster-state=new",
		// A test cluster's data dies with the test; skip the fsyncs.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

func (c *Cluster) apiserverArgs() []string {
	p := c.pki
	return append([]string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.apiserver),
		// The default reconciler refuses to advertise 127.0.0.1.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.cfg.RootDir, "apiserver"),
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		// Request-header authentication (front proxy), as kubeadm does.
		"--requestheader-client-ca-file=" + p.frontProxyCA,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.proxyClientCert,
		"--proxy-client-key-file=" + p.proxyClientKey,
		"--allow-privileged=true",
		"--profiling=false",
	}, c.cfg.Timing.KubeAPIServerArgs()...)
}

// controlPlaneArgs are the flags kube-controller-manager and
// kube-scheduler share: their kubeconfig (below RootDir) for the API and
// for delegated authentication and authorization, HTTPS on port with the
// serving certificate, no leader election.
func (c *Cluster) controlPlaneArgs(kubeconfig string, port int) []string {
	p := c.pki
	kc := filepath.Join(c.cfg.RootDir, kubeconfig)
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caCert,
		"--leader-elect=false",
	}
}

func (c *Cluster) kcmArgs() []string {
	p := c.pki
	return append(append(c.controlPlaneArgs("kube-controller-manager.kubeconfig", c.ports.kcm),
		"--controllers="+c.cfg.ControllersFlag,
		// Each controller runs as its own service account, as with kubeadm.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.saKey,
		"--root-ca-file="+p.caCert,
		"--cluster-signing-cert-file="+p.caCert,
		"--cluster-signing-key-file="+p.caKey,
		"--cluster-name=csisim-realkube",
		"--profiling=false",
	), c.cfg.Timing.KubeControllerManagerArgs()...)
}

func (c *Cluster) schedulerArgs() []string {
	return append(c.controlPlaneArgs("kube-scheduler.kubeconfig", c.ports.scheduler), "--profiling=false")
}

// enablesControllers says whether a --controllers value turns on any
// controller ("*", "foo", "*,-bar" do; "-*" or "-foo,-bar" do not).
func enablesControllers(flag string) bool {
	for _, item := range strings.Split(flag, ",") {
		item = strings.TrimSpace(item)
		if item != "" && !strings.HasPrefix(item, "-") {
			return true
		}
	}
	return false
}
