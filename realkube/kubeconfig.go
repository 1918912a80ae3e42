package realkube

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The kubeconfigs and client configurations of a cluster: the admin's,
// straight to kube-apiserver, and the components' and kubelets', through
// the API proxy.

// writeKubeconfigs writes admin.kubeconfig (KubeconfigPath), to
// kube-apiserver, and, through the API proxy, components.kubeconfig
// (ComponentKubeconfigPath) and one kubeconfig each for the controller
// manager and the scheduler; and sets up the admin rest.Config.
func (c *Cluster) writeKubeconfigs() error {
	host := fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver)
	p, proxied := c.pki, c.proxy.URL()
	write := c.writeKubeconfig
	var err error
	if c.kubeconfig, err = write("admin.kubeconfig", host, "admin", p.adminCert, p.adminKey); err != nil {
		return err
	}
	if c.componentKubeconfig, err = write("components.kubeconfig", proxied, "admin", p.adminCert, p.adminKey); err != nil {
		return err
	}
	if _, err = write("kube-controller-manager.kubeconfig", proxied, "kube-controller-manager", p.kcmCert, p.kcmKey); err != nil {
		return err
	}
	if _, err = write("kube-scheduler.kubeconfig", proxied, "kube-scheduler", p.schedulerCert, p.schedulerKey); err != nil {
		return err
	}
	c.restConfig = &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: p.adminCertPEM,
			KeyData:  p.adminKeyPEM,
		},
		QPS:   50,
		Burst: 100,
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for user with a client certificate
// of server to file below RootDir and returns its path.
func (c *Cluster) writeKubeconfig(file, server, user, cert, key string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["realkube"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: c.pki.caCert}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts["realkube"] = &clientcmdapi.Context{Cluster: "realkube", AuthInfo: user}
	cfg.CurrentContext = "realkube"
	path := filepath.Join(c.cfg.RootDir, file)
	return path, clientcmd.WriteToFile(*cfg, path)
}

// NodeKubeconfig writes a kubeconfig for the kubelet of node — a client
// certificate for system:node:<node> in group system:nodes, what TLS
// bootstrapping gives a real kubelet — through the API proxy, and returns
// its path.
func (c *Cluster) NodeKubeconfig(node string) (string, error) {
	cert, key, err := c.pki.nodeClient(node)
	if err != nil {
		return "", err
	}
	return c.writeKubeconfig("kubelet-"+node+".kubeconfig", c.proxy.URL(), "system:node:"+node, cert, key)
}

// adminHTTPClient is a plain HTTP client with the admin certificate that
// trusts the cluster CA (which also signed the kcm and scheduler serving
// certificate).
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.pki.caPEM) {
		return nil, errors.New("realkube: bad CA certificate")
	}
	cert, err := tls.X509KeyPair(c.pki.adminCertPEM, c.pki.adminKeyPEM)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"},
		},
	}, nil
}
