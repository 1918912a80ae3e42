// Command labs-check checks the labs of docs/labs (make labs-check): each
// lab's commands against a fresh csisim serve, and the answers the lab
// gives against what the commands print; and the examples of README.md and
// docs/ the same way, without a cluster. See package labcheck.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/csisim/csisim/internal/labcheck"
)

func main() {
	csisim := flag.String("csisim", "bin/csisim", "the csisim binary the labs call")
	repo := flag.String("repo", ".", "the repository, linked into the directory where a document's commands run")
	ci := flag.String("ci", ".ci/run", "the CI script whose stages a sh ci block's commands must be")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: labs-check [--csisim BIN] [--repo DIR] [--ci SCRIPT] DOC.md...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	bin, err := filepath.Abs(*csisim)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "labs-check: the csisim binary: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := 0
	for _, path := range flag.Args() {
		start := time.Now()
		lab, err := labcheck.ParseFile(path)
		if err == nil {
			err = labcheck.Check(ctx, lab, labcheck.Config{BinDir: filepath.Dir(bin), Log: os.Stdout, RepoDir: *repo, CIScript: *ci})
		}
		if err != nil {
			failed++
			fmt.Printf("FAIL %s (%.0fs)\n%v\n", path, time.Since(start).Seconds(), err)
			continue
		}
		fmt.Printf("PASS %s (%.0fs)\n", path, time.Since(start).Seconds())
	}
	if failed > 0 {
		fmt.Printf("%d of %d labs failed\n", failed, flag.NArg())
		os.Exit(1)
	}
}
