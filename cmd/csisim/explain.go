package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/explain"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

func explainCommand() *command {
	return &command{
		name:    "explain",
		summary: "say why an object is stuck, from a live cluster or a run's JSON timeline (--trace)",
		usage:   []string{"csisim explain [--kubeconfig FILE | --trace FILE [--at TIME]] [-n NAMESPACE] KIND/NAME"},
		about: "Says why the object is where it is, as a chain from it to the cause: a claim Pending because\n" +
			"its pod is unschedulable, a pod waiting for a volume still attached to a lost node, a deletion\n" +
			"held by a finalizer. KIND is one of pod, pvc, pv, volumeattachment (va), node, volumesnapshot (vs),\n" +
			"in any form kubectl accepts (pvc, persistentvolumeclaim, persistentvolumeclaims).",
		prefix:  "csisim explain",
		minArgs: 1, maxArgs: 2, flagsAnywhere: true, signals: true,
		new: func() subcommand { return &explainCmd{} },
	}
}

// explainCmd is `csisim explain`: why is this object stuck, read from a
// live cluster (csisim serve, or any real one).
type explainCmd struct {
	invocation
	kubeconfig string
	namespace  string
	timeout    time.Duration
	traceFile  string
	at         *time.Duration
}

func (c *explainCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.namespace, "namespace", "", "the namespace of a namespaced object (default: the kubeconfig context's, else default)")
	fs.StringVar(&c.namespace, "n", "", "short for --namespace")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up reading the cluster after this long")
	fs.StringVar(&c.traceFile, "trace", "", "explain from a finished run's timeline instead of a live cluster: the JSON timeline\n"+
		"csisim run --format json writes (the state when its steps ended; namespace default unless -n)")
	fs.Func("at", "with --trace: the state at this virtual time of the run (2m30s, +150.000s as the timeline prints it)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a virtual time since the run started, like 2m30s: %w", err)
		}
		c.at = &d
		return nil
	})
}

func (c *explainCmd) Run(ctx context.Context) error {
	// KIND/NAME, or KIND NAME as kubectl also takes.
	targetArg := strings.Join(c.args, "/")
	if c.traceFile != "" {
		return exitStatus(explainTrace(c.traceFile, targetArg, c.namespace, c.at, c.stdout, c.stderr))
	}
	if c.at != nil {
		return usagef("--at needs --trace: a live cluster's API keeps no history to go back in")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	namespace := c.namespace
	if namespace == "" {
		if ns, _, err := loader.Namespace(); err == nil {
			namespace = ns
		}
	}
	target, err := explain.ParseTarget(targetArg, namespace)
	if err != nil {
		return usageError(err)
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return usagef("reading the kubeconfig: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	snap, err := explain.FromCluster(ctx, cfg)
	if err != nil {
		return err
	}
	return exitStatus(printExplanation(snap, target, c.stdout, c.stderr))
}

// explainTrace explains the object as it was when the steps of the run
// whose JSON timeline is in file ended, or at the virtual time at.
func explainTrace(file, targetArg, namespace string, at *time.Duration, stdout, stderr io.Writer) int {
	if namespace == "" {
		namespace = "default"
	}
	target, err := explain.ParseTarget(targetArg, namespace)
	if err != nil {
		fmt.Fprintf(stderr, "csisim explain: %v\n", err)
		return 2
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "csisim explain: %v\n", err)
		return 2
	}
	defer f.Close()
	tl, err := trace.ReadJSON(f)
	if err != nil {
		fmt.Fprintf(stderr, "csisim explain: %s: %v (--trace reads the timeline csisim run --format json writes)\n", file, err)
		return 2
	}
	n, when := explain.EndOfSteps(tl.Entries)
	if at != nil {
		if n, err = explain.PointAt(tl.Entries, *at); err != nil {
			fmt.Fprintf(stderr, "csisim explain: --at %s: %v\n", *at, err)
			return 2
		}
		when = *at
	}
	return printExplanation(explain.SnapshotAt(tl.Entries, n, when), target, stdout, stderr)
}

// printExplanation explains target from snap; 1 if it is not there.
func printExplanation(snap *explain.Snapshot, target explain.Ref, stdout, stderr io.Writer) int {
	e, err := explain.Explain(snap, target)
	if err != nil {
		fmt.Fprintf(stderr, "csisim explain: %v\n", err)
		return 1
	}
	if _, err := e.WriteTo(stdout); err != nil {
		fmt.Fprintf(stderr, "csisim explain: %v\n", err)
		return 1
	}
	return 0
}

// explainFlag is `csisim run --explain KIND/NAME`: at the end of the run,
// it explains the object from the run's history (the outcome's timeline;
// it keeps no copy of its own, which cost as much memory as the timeline).
type explainFlag struct {
	target string
}

const explainUsage = "at the end of the run, say why this object (KIND/NAME, e.g. pvc/data; namespace default) is where it is,\n" +
	"from the run's history (see csisim explain)"

// check parses the target early, so a typo fails before the run.
func (x *explainFlag) check() error {
	if x.target == "" {
		return nil
	}
	_, err := explain.ParseTarget(x.target, "")
	return err
}

// print writes the explanation from what the run recorded: of the
// --explain target, or else, when the run failed waiting for an object
// Explain knows, of that object.
func (x *explainFlag) print(sc *scenarios.Scenario, out runOutcome, stdout, stderr io.Writer) {
	if x.target == "" {
		// Beside the failure, on stderr.
		x.printFailedWait(sc, out, stderr)
		return
	}
	target, err := explain.ParseTarget(x.target, "")
	if err != nil {
		fmt.Fprintf(stderr, "csisim: --explain: %v\n", err)
		return
	}
	entries := out.entries
	fmt.Fprintf(stdout, "\nWhy %s is where it is, at the end of the run:\n", target)
	n, at := explain.EndOfSteps(entries)
	printExplanation(explain.SnapshotAt(entries, n, at), target, stdout, stderr)
}

// printFailedWait explains the object a failed wait step waited for, if
// Explain knows its kind; it prints nothing otherwise.
func (x *explainFlag) printFailedWait(sc *scenarios.Scenario, out runOutcome, w io.Writer) {
	var stepErr *scenarios.StepError
	if !errors.As(out.runErr, &stepErr) || stepErr.Step < 1 || stepErr.Step > len(sc.Steps) {
		return
	}
	wait := sc.Steps[stepErr.Step-1].Wait
	if wait == nil || wait.Object.Name == "" {
		return
	}
	name := wait.Object.Name
	if out.result != nil {
		for k, v := range out.result.Vars {
			name = strings.ReplaceAll(name, "${"+k+"}", v)
		}
	}
	target, err := explain.ParseTarget(wait.Object.Kind+"/"+name, wait.Namespace)
	if err != nil {
		return // not a kind Explain knows, or a name the run never saved
	}
	entries := out.entries
	// As it was when the wait gave up: not after, when the cluster's
	// shutdown cut off what was in flight.
	n := slices.IndexFunc(entries, func(e trace.Entry) bool {
		return e.Kind == trace.Step && strings.HasPrefix(e.Detail, fmt.Sprintf("step %d failed", stepErr.Step))
	}) + 1
	if n == 0 {
		return
	}
	e, err := explain.Explain(explain.SnapshotAt(entries, n, entries[n-1].At), target)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "\nWhy %s is where it is (csisim explain):\n", target)
	_, _ = e.WriteTo(w)
}
