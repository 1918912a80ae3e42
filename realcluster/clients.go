package realcluster

// How the cluster's own clients reach the API server, and where its
// processes' output goes.

import (
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"
)

// clientConfig is the admin configuration under a user agent of its own,
// which names the client's writes in the timeline, without client-side
// rate limits (a scenario's waits poll every 20 ms). It reaches
// kube-apiserver directly, past the API server faults, as a harness
// does.
func (c *Cluster) clientConfig(userAgent string) *rest.Config {
	return withUserAgent(c.kube.RESTConfig(), userAgent)
}

// componentConfig is clientConfig through the API proxy, for a component
// of the cluster (a simulated kubelet), which the API server faults
// strike.
func (c *Cluster) componentConfig(userAgent string) *rest.Config {
	return withUserAgent(c.kube.ComponentRESTConfig(), userAgent)
}

func withUserAgent(cfg *rest.Config, userAgent string) *rest.Config {
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// logWriter is where a process's output goes: a file below the run root's
// logs/, and Config.Log.
func (c *Cluster) logWriter(name string) (io.Writer, error) {
	f, err := os.Create(c.root.Path("logs", name+".log"))
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	c.logs = append(c.logs, f)
	if c.cfg.Log == nil {
		return f, nil
	}
	return io.MultiWriter(f, c.cfg.Log), nil
}
