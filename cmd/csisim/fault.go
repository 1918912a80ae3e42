package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
)

// faultPath is where csisim serve takes faults: POST a fault step of the
// scenario language (scenarios/README.md), e.g. "nodeLoss: {node: node-2}".
const faultPath = "/csisim/faults"

func faultCommand() *command {
	kinds := make([]string, len(fault.Kinds))
	for i, k := range fault.Kinds {
		kinds[i] = string(k)
	}
	return &command{
		name:    "fault",
		summary: "make a fault happen on a cluster of csisim serve",
		usage:   []string{"csisim fault [--kubeconfig FILE] FAULT [FIELD=VALUE ...]"},
		about: `Makes a fault happen on a cluster of csisim serve, now: the fault steps of
scenarios (scenarios/README.md) with their fields as FIELD=VALUE, e.g.

  csisim fault node-loss node=node-2
  csisim fault out-of-service node=node-2
  csisim fault missing-mount-propagation node=node-1
  csisim fault driver-crash plugin=node node=node-1
  csisim fault csi-error method=NodeStageVolume code=Internal times=2
  csisim fault csi-lost-answer method=CreateVolume times=1 firstAttempt=true
  csisim fault driver-crash-mid-call method=NodeStageVolume times=1 plugin=node node=node-1
  csisim fault sidecar-restart component=external-provisioner
  csisim fault stale-volumeattachment node=node-1 claim=data
  csisim fault volume-health claim=data status=DEGRADED reason=ReplicaLost
  csisim fault mount-busy pod=app volume=data for=30s
  csisim fault controller-manager-restart
  csisim fault api-server-down duration=30s
  csisim fault api-slow-writes latency=2s duration=1m
  csisim fault api-throttle times=20 retryAfter=2s component=external-attacher

Faults: ` + strings.Join(kinds, ", "),
		prefix:  "csisim fault",
		minArgs: 1, maxArgs: -1,
		new: func() subcommand { return &faultCmd{} },
	}
}

// faultCmd is `csisim fault`: it sends one fault step to the fault
// endpoint of the csisim serve the kubeconfig points at.
type faultCmd struct {
	invocation
	kubeconfig string
}

func (c *faultCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "the kubeconfig csisim serve wrote (default: $KUBECONFIG)")
}

func (c *faultCmd) Run(context.Context) error {
	kubeconfig := c.kubeconfig
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		return errShowUsage
	}
	step, err := faultStep(c.args[0], c.args[1:])
	if err != nil {
		return usageError(err)
	}
	msg, err := postFault(kubeconfig, step)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, msg)
	return nil
}

// faultStep writes KIND and FIELD=VALUE arguments as a scenario step,
// {KIND: {FIELD: VALUE, ...}}, each value read as YAML would read it (so
// times=2 is a number).
func faultStep(kind string, fields []string) ([]byte, error) {
	values := map[string]any{}
	for _, f := range fields {
		name, text, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not FIELD=VALUE", f)
		}
		var v any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			return nil, fmt.Errorf("the value of %s: %w", name, err)
		}
		values[name] = v
	}
	return yaml.Marshal(map[string]any{kind: values})
}

// postFault sends step to the fault endpoint of the server in kubeconfig
// and returns what the server answered.
func postFault(kubeconfig string, step []byte) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Post(strings.TrimSuffix(cfg.Host, "/")+faultPath, "application/yaml", bytes.NewReader(step))
	if err != nil {
		return "", fmt.Errorf("is csisim serve running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(msg)
	}
	return msg, nil
}

// withFaultEndpoint serves the fault endpoint beside the API server api.
func withFaultEndpoint(c *cluster.Cluster, api http.Handler) http.Handler {
	faults := faultHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == faultPath {
			faults.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// faultHandler reads a fault step from a POST, checks it as the scenario
// parser checks a scenario's steps (against the cluster's nodes), and
// injects it into the running cluster.
func faultHandler(c *cluster.Cluster) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST a fault step, e.g. node-loss: {node: node-1}", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f, err := parseFaultStep(body, c.Nodes())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := c.InjectFaultLive(r.Context(), f); err != nil {
			http.Error(w, fmt.Sprintf("%s: %v", f.Describe(), err), http.StatusConflict)
			return
		}
		fmt.Fprintf(w, "injected %s\n", f.Describe())
	})
}

// parseFaultStep reads one fault step with the scenario parser, as the
// only step of a scenario on nodes, so that it means and checks exactly
// what it does in a scenario file.
func parseFaultStep(step []byte, nodes []string) (fault.Fault, error) {
	var v map[string]any
	if err := yaml.Unmarshal(step, &v); err != nil {
		return fault.Fault{}, fmt.Errorf("reading the fault step: %w", err)
	}
	// Only fault steps reach the parser: other steps would read files
	// (apply: {file: ...}) or wait.
	// A fault is named as --help and the timeline write it (node-loss)
	// or by its step key (nodeLoss).
	for name, fields := range v {
		key := ""
		for _, k := range fault.Kinds {
			if name == string(k) || name == scenarios.FaultStepKey(k) {
				key = scenarios.FaultStepKey(k)
			}
		}
		if len(v) != 1 || key == "" {
			return fault.Fault{}, fmt.Errorf("not a fault step: %q (the faults: %v)", name, fault.Kinds)
		}
		v = map[string]any{key: fields}
	}
	doc, err := yaml.Marshal(map[string]any{"cluster": map[string]any{"nodes": nodes}, "steps": []any{v}})
	if err != nil {
		return fault.Fault{}, err
	}
	s, err := scenarios.Parse("fault", doc, ".")
	var perrs scenarios.ParseErrors
	if errors.As(err, &perrs) {
		// The lines and step numbers are the made-up scenario's: say
		// only what is wrong.
		msgs := make([]string, len(perrs))
		for i, e := range perrs {
			msgs[i] = e.Msg
		}
		return fault.Fault{}, errors.New(strings.Join(msgs, "; "))
	}
	if err != nil {
		return fault.Fault{}, err
	}
	if len(s.Steps) != 1 || s.Steps[0].Fault == nil {
		return fault.Fault{}, errors.New("not a fault step")
	}
	return *s.Steps[0].Fault, nil
}
