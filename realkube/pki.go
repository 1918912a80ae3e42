package realkube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the file names of the certificates and keys of one cluster, all
// below <RootDir>/pki.
type pki struct {
	dir string

	caCert, caKey               string
	servingCert, servingKey     string // SAN 127.0.0.1, localhost; used by apiserver, kcm, scheduler
	adminCert, adminKey         string // O=system:masters
	kcmCert, kcmKey             string // CN=system:kube-controller-manager
	schedulerCert, schedulerKey string // CN=system:kube-scheduler
	saKey, saPub                string // service-account token signing key pair
	frontProxyCA                string // request-header (front proxy) CA
	proxyClientCert             string // CN=front-proxy-client, signed by frontProxyCA
	proxyClientKey              string

	caPEM, adminCertPEM, adminKeyPEM []byte
	ca                               *certificate // signs the kubelets' client certificates later
}

// frontProxyClientName is the CN the API server presents to aggregated
// API servers.
const frontProxyClientName = "front-proxy-client"

// serviceIP is the first address of serviceCIDR, the "kubernetes" service.
const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"
)

// certificate is a signed certificate with its key.
type certificate struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	keyPEM  []byte
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// sign creates a certificate from tmpl, signed by parent (self-signed if nil).
func sign(tmpl *x509.Certificate, parent *certificate) (*certificate, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = sn
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certificate{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:     key,
		keyPEM:  keyPEM,
	}, nil
}

// signCA creates a self-signed certificate authority named cn.
func signCA(cn string) (*certificate, error) {
	return sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

// signClient creates a client certificate for user cn in groups orgs,
// signed by ca.
func signClient(ca *certificate, cn string, orgs ...string) (*certificate, error) {
	return sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
}

// pkiCerts are the certificates and keys of one cluster, before they are
// written.
type pkiCerts struct {
	ca, serving, admin, kcm, sched *certificate
	// A separate CA for the aggregation layer's request-header
	// authentication, as kubeadm sets it up; kube-controller-manager and
	// kube-scheduler read it from kube-system/extension-apiserver-authentication.
	frontProxyCA, proxyClient *certificate
	saKeyPEM, saPubPEM        []byte
}

// newPKICerts generates a cluster's certificates and keys, with
// crypto/x509 only.
func newPKICerts() (*pkiCerts, error) {
	var c pkiCerts
	var err error
	if c.ca, err = signCA("csisim-realkube-ca"); err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	c.serving, err = sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
	}, c.ca)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if c.admin, err = signClient(c.ca, "kubernetes-admin", "system:masters"); err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	if c.kcm, err = signClient(c.ca, "system:kube-controller-manager"); err != nil {
		return nil, fmt.Errorf("controller-manager certificate: %w", err)
	}
	if c.sched, err = signClient(c.ca, "system:kube-scheduler"); err != nil {
		return nil, fmt.Errorf("scheduler certificate: %w", err)
	}
	if c.frontProxyCA, err = signCA("csisim-realkube-front-proxy-ca"); err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	if c.proxyClient, err = signClient(c.frontProxyCA, frontProxyClientName); err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	saKey, saKeyPEM, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	c.saKeyPEM, c.saPubPEM = saKeyPEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})
	return &c, nil
}

// newPKI generates a CA, serving and client certificates and the
// service-account key pair, and writes them below dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c, err := newPKICerts()
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	files := []struct {
		name *string
		file string
		data []byte
		perm os.FileMode
	}{
		{&p.caCert, "ca.crt", c.ca.certPEM, 0o644},
		{&p.caKey, "ca.key", c.ca.keyPEM, 0o600},
		{&p.servingCert, "serving.crt", c.serving.certPEM, 0o644},
		{&p.servingKey, "serving.key", c.serving.keyPEM, 0o600},
		{&p.adminCert, "admin.crt", c.admin.certPEM, 0o644},
		{&p.adminKey, "admin.key", c.admin.keyPEM, 0o600},
		{&p.kcmCert, "kube-controller-manager.crt", c.kcm.certPEM, 0o644},
		{&p.kcmKey, "kube-controller-manager.key", c.kcm.keyPEM, 0o600},
		{&p.schedulerCert, "kube-scheduler.crt", c.sched.certPEM, 0o644},
		{&p.schedulerKey, "kube-scheduler.key", c.sched.keyPEM, 0o600},
		{&p.frontProxyCA, "front-proxy-ca.crt", c.frontProxyCA.certPEM, 0o644},
		{&p.proxyClientCert, "front-proxy-client.crt", c.proxyClient.certPEM, 0o644},
		{&p.proxyClientKey, "front-proxy-client.key", c.proxyClient.keyPEM, 0o600},
		{&p.saKey, "sa.key", c.saKeyPEM, 0o600},
		{&p.saPub, "sa.pub", c.saPubPEM, 0o644},
	}
	for _, f := range files {
		*f.name = filepath.Join(dir, f.file)
		if err := os.WriteFile(*f.name, f.data, f.perm); err != nil {
			return nil, err
		}
	}
	p.caPEM, p.ca = c.ca.certPEM, c.ca
	p.adminCertPEM, p.adminKeyPEM = c.admin.certPEM, c.admin.keyPEM
	return p, nil
}

// nodeClient writes a client certificate and key for the kubelet of node,
// as the kubelet's TLS bootstrap would obtain one: CN system:node:<node>,
// O system:nodes, so the Node authorizer and the NodeRestriction admission
// plugin treat it as that node. It returns the two file names.
func (p *pki) nodeClient(node string) (certFile, keyFile string, err error) {
	cert, err := signClient(p.ca, "system:node:"+node, "system:nodes")
	if err != nil {
		return "", "", fmt.Errorf("client certificate of node %s: %w", node, err)
	}
	certFile, keyFile = filepath.Join(p.dir, "node-"+node+".crt"), filepath.Join(p.dir, "node-"+node+".key")
	if err := os.WriteFile(certFile, cert.certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, cert.keyPEM, 0o600)
}
