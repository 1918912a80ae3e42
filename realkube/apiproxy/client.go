package apiproxy

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// Client is who sent a request, as far as the proxy can tell without
// asking the API server: the user and groups of its verified client
// certificate (kube-apiserver's x509 authenticator reads the same: CN is
// the user, O the groups), and its User-Agent. A request authenticated by
// a bearer token (kube-controller-manager's controllers, each with its
// service account's token) has no User here; its User-Agent names the
// account: client-go's AddUserAgent appends it to the binary's
// ("kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/…/system:serviceaccount:kube-system:attachdetach-controller",
// k8s.io/controller-manager pkg/clientbuilder client_builder_dynamic.go).
type Client struct {
	User      string
	Groups    []string
	UserAgent string
	// cert is the client's verified certificate, nil for none.
	cert *x509.Certificate
}

// clientOf tells who sent r.
func clientOf(r *http.Request) Client {
	c := Client{UserAgent: r.UserAgent()}
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return c
	}
	cert := r.TLS.VerifiedChains[0][0]
	if cert.Subject.CommonName == "" {
		// kube-apiserver's authenticator takes no user from such a
		// certificate; neither does the proxy.
		return c
	}
	c.User, c.Groups, c.cert = cert.Subject.CommonName, cert.Subject.Organization, cert
	return c
}

// Request-header authentication: the headers kube-apiserver reads the user
// from when the request comes with the front-proxy client certificate
// (realkube's --requestheader-username-headers, --requestheader-group-headers,
// --requestheader-extra-headers-prefix).
const (
	userHeader        = "X-Remote-User"
	groupHeader       = "X-Remote-Group"
	extraHeaderPrefix = "X-Remote-Extra-"
)

// credentialIDKey is the extra the x509 authenticator gives a certificate's
// user: its fingerprint, "X509SHA256=<hex>" (k8s.io/apiserver
// pkg/authentication/request/x509/x509.go CommonNameUserConversion; the
// key is user.CredentialIDKey).
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// setIdentity removes every request header a client could claim an
// identity with, and, for a client with a certificate, says who it is in
// the request headers, with the user info kube-apiserver's x509
// authenticator would have given it.
func setIdentity(h http.Header, c Client) {
	for name := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), extraHeaderPrefix) {
			h.Del(name)
		}
	}
	h.Del(userHeader)
	h.Del(groupHeader)
	if c.cert == nil {
		return
	}
	h.Set(userHeader, c.User)
	for _, g := range c.Groups {
		h.Add(groupHeader, g)
	}
	fp := sha256.Sum256(c.cert.Raw)
	// The extra's key travels escaped, as kube-apiserver unescapes it.
	h.Set(extraHeaderPrefix+url.PathEscape(credentialIDKey), "X509SHA256="+hex.EncodeToString(fp[:]))
}

// FirstWord is the default Config.Component: the first word of the
// User-Agent, up to the first slash — the field manager kube-apiserver
// names a writer by ("csi-provisioner", "kube-controller-manager").
func FirstWord(c Client) string {
	name, _, _ := strings.Cut(c.UserAgent, "/")
	return strings.TrimSpace(name)
}
