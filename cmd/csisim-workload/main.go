// Command csisim-workload is what runs in the containers of csisim's real
// nodes, where pods need images but no registry can be reached: one small
// static binary that is both the pod sandbox's pause process and the
// workload container that checks its volumes with package workload.
//
//	csisim-workload pause
//	csisim-workload run --volume /data=CLAIM [--volume ...] [--read-only-volume /x=CLAIM ...]
//
// run takes the pod's identity from the environment (POD_UID,
// POD_NAMESPACE, POD_NAME, which the pod sets from the downward API),
// prints one line per volume and then waits, like pause, for SIGTERM or
// SIGINT. It must stay free of cgo and of any module but the standard
// library and csisim's workload package, so that it runs in an image that
// holds nothing else (see main_test.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/csisim/csisim/workload"
)

const usage = `Usage:
  csisim-workload pause
      block until SIGTERM or SIGINT (a pod sandbox's pause process)
  csisim-workload run [--volume PATH=CLAIM ...] [--read-only-volume PATH=CLAIM ...]
      check each volume's markers (and write this pod's own, unless read-only),
      print one line per volume, then block until SIGTERM or SIGINT.
      The pod is named by the environment: POD_UID, POD_NAMESPACE, POD_NAME.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole program but for the process: it returns the exit code
// and blocks until ctx is done once its work is over, so that a test can
// run it and then cancel it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "pause":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "csisim-workload pause: unexpected argument %q\n", args[1])
			return 2
		}
		<-ctx.Done()
		return 0
	case "run":
		vols, err := parseRun(args[1:])
		if err != nil {
			fmt.Fprintf(stderr, "csisim-workload run: %v\n\n%s", err, usage)
			return 2
		}
		pod, err := podFromEnv(getenv)
		if err != nil {
			fmt.Fprintf(stderr, "csisim-workload run: %v\n", err)
			return 2
		}
		if err := checkVolumes(vols, pod, stdout); err != nil {
			// Exit rather than wait: the container fails where everyone
			// sees it (its status, restarts, the pod's events).
			fmt.Fprintf(stderr, "csisim-workload: %v\n", err)
			return 1
		}
		<-ctx.Done()
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "csisim-workload: unknown mode %q\n\n%s", args[0], usage)
		return 2
	}
}

// volume is one volume the container checks: where it is mounted and the
// claim it comes from.
type volume struct {
	Path, Claim string
	ReadOnly    bool
}

func parseRun(args []string) ([]volume, error) {
	fs := flag.NewFlagSet("csisim-workload run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports the error with the usage itself
	var vols []volume
	add := func(readOnly bool) func(string) error {
		return func(s string) error {
			path, claim, ok := strings.Cut(s, "=")
			switch {
			case !ok || claim == "":
				return fmt.Errorf("want PATH=CLAIM, got %q", s)
			case !filepath.IsAbs(path):
				return fmt.Errorf("path %q is not absolute", path)
			}
			vols = append(vols, volume{Path: filepath.Clean(path), Claim: claim, ReadOnly: readOnly})
			return nil
		}
	}
	fs.Func("volume", "a volume mounted at PATH from claim CLAIM, as PATH=CLAIM (repeatable)", add(false))
	fs.Func("read-only-volume", "a volume mounted read-only, as PATH=CLAIM: its markers are read, none is written (repeatable)", add(true))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return vols, nil
}

// podFromEnv reads the pod's identity. All three are required: a marker
// without its pod's UID could not be told from another's.
func podFromEnv(getenv func(string) string) (workload.Pod, error) {
	pod := workload.Pod{UID: getenv("POD_UID"), Namespace: getenv("POD_NAMESPACE"), Name: getenv("POD_NAME")}
	var missing []string
	for _, v := range []struct{ name, value string }{{"POD_UID", pod.UID}, {"POD_NAMESPACE", pod.Namespace}, {"POD_NAME", pod.Name}} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return pod, fmt.Errorf("environment variable(s) %s not set (set them from the downward API: metadata.uid, metadata.namespace, metadata.name)", strings.Join(missing, ", "))
	}
	return pod, nil
}

// checkVolumes runs workload.Check on every volume and prints one line for
// each. A failing volume does not stop the others from being checked; the
// errors of all come back together.
func checkVolumes(vols []volume, pod workload.Pod, stdout io.Writer) error {
	var errs []error
	for _, v := range vols {
		p := pod
		p.Claim = v.Claim
		rep, err := workload.Check(v.Path, p, v.ReadOnly)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (claim %s/%s): %w", v.Path, pod.Namespace, v.Claim, err))
			continue
		}
		fmt.Fprintln(stdout, workload.ReportLine(v.Path, p, rep))
	}
	return errors.Join(errs...)
}
