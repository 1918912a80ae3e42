// Package livenessprobe is csisim's stand-in for the livenessprobe sidecar
// (kubernetes-csi/livenessprobe), which is not on the Go module proxy and
// so cannot be built where csisim builds its images offline
// (deploy/kubernetes/variants/built-here): an HTTP endpoint /healthz that
// a pod's liveness and readiness probes ask, and that asks the CSI driver
// in turn.
//
// As the sidecar does (cmd/livenessprobe/main.go, v2.19): each request
// dials the driver's socket and calls Identity.Probe within the probe
// timeout (3 s by default). A driver that cannot be reached or whose Probe
// fails is unhealthy (500 with the error's text); one that answers
// ready=false too (500 "driver responded but is not ready"); otherwise 200
// "ok". A Probe answer without the ready field counts as ready, as CSI
// says it does.
package livenessprobe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csisim/csisim/drivers/endpoint"
)

// DefaultProbeTimeout is how long a check may take, the sidecar's
// --probe-timeout default.
const DefaultProbeTimeout = 3 * time.Second

// DefaultHealthPort is the sidecar's --health-port default.
const DefaultHealthPort = "9808"

// notReady is the sidecar's answer for a driver that says it is not ready.
const notReady = "driver responded but is not ready"

// Handler serves /healthz for the CSI driver at csiAddress (a socket path
// or unix:// endpoint), logging failures to log.
func Handler(csiAddress string, timeout time.Duration, log io.Writer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := check(ctx, csiAddress); err != nil {
			fmt.Fprintf(log, "livenessprobe: health check failed: %v\n", err)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(err.Error()))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// check calls Probe on the driver.
func check(ctx context.Context, csiAddress string) error {
	target, err := endpoint.DialTarget(csiAddress)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to the CSI driver at %s: %w", csiAddress, err)
	}
	defer conn.Close()
	resp, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return fmt.Errorf("probe the CSI driver at %s: %w", csiAddress, err)
	}
	if resp.GetReady() != nil && !resp.GetReady().GetValue() {
		return fmt.Errorf("%s", notReady)
	}
	return nil
}

// Serve serves Handler on addr until ctx ends.
func Serve(ctx context.Context, addr, csiAddress string, timeout time.Duration, log io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("livenessprobe: %w", err)
	}
	srv := &http.Server{Handler: Handler(csiAddress, timeout, log), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(log, "livenessprobe: serving /healthz on %s for the CSI driver at %s\n", ln.Addr(), csiAddress)
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("livenessprobe: %w", err)
	}
	return nil
}
