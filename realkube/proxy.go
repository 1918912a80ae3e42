package realkube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/csisim/csisim/realkube/apiproxy"
)

// startAPIProxy starts the reverse proxy the components reach
// kube-apiserver through (package apiproxy): it serves with the API
// server's own certificate (SAN 127.0.0.1), trusts the cluster CA's client
// certificates, and passes their users on to kube-apiserver by
// request-header authentication with the front-proxy client certificate,
// which kube-apiserver's --requestheader-* flags trust. The proxy listens
// on a port of its own, which is not among the reserved ones: it binds it
// at once.
func (c *Cluster) startAPIProxy() error {
	p := c.pki
	serving, err := tls.LoadX509KeyPair(p.servingCert, p.servingKey)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	frontProxy, err := tls.LoadX509KeyPair(p.proxyClientCert, p.proxyClientKey)
	if err != nil {
		return fmt.Errorf("front-proxy client certificate: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(p.caPEM) {
		return errors.New("bad CA certificate")
	}
	var log io.Writer
	if c.cfg.Log != nil {
		log = &prefixWriter{prefix: "[apiproxy] ", w: c.cfg.Log}
	}
	c.proxy, err = apiproxy.Start(apiproxy.Config{
		Backend:    fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver),
		Serving:    serving,
		ClientCAs:  cas,
		BackendCAs: cas,
		FrontProxy: frontProxy,
		Component:  c.cfg.APIComponent,
		Log:        log,
		// The proxy comes back from an outage as a restarted
		// kube-apiserver, whose watch cache begins at the current
		// resourceVersion.
		ResourceVersion: c.resourceVersion,
	})
	return err
}

// resourceVersion is the cluster's current resourceVersion: that of a
// list of namespaces, read from etcd at its current revision.
func (c *Cluster) resourceVersion(ctx context.Context) (uint64, error) {
	client, err := c.adminHTTPClient()
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host()+"/api/v1/namespaces?limit=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("listing namespaces: HTTP %d", resp.StatusCode)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("listing namespaces: %w", err)
	}
	return strconv.ParseUint(list.Metadata.ResourceVersion, 10, 64)
}
