package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childRun runs each seed of a sweep as a child process: the csisim
// binary itself, running `csisim run --seed N` with the sweep's other
// flags — the replay command of the seed, plus --quiet and --json-result,
// through which the child says how its run went.
//
// Why processes and not clusters side by side in this one: a simulation
// is a value and two of them in one process do give the same results as
// alone, but each run is bound by the latency of handing control between
// goroutines and of gRPC round trips, not by CPU, and two of them in one
// Go runtime wait on each other's goroutines for a processor: a sweep of
// node-loss-force-detach ran slower at --parallel 2 than at 1. As
// processes, they also share no garbage collector, a crash or a leak stays
// in its seed, and what runs is exactly what the replay command runs.
type childRun struct {
	binary string
	// args are the flags of `csisim run` for one seed, without
	// --json-result and the scenario file, which come last.
	args func(seed uint64) []string
	file string
	// stopGrace is how long a child may take to tear its cluster down
	// after it was interrupted, before it is killed (leaving the rest to
	// the next run's sweep of dead runs).
	stopGrace time.Duration
}

// resultFD is the file descriptor on which a child finds the pipe for its
// result: the first of exec.Cmd.ExtraFiles.
const resultFD = 3

// runSeed runs one seed in a child process and reads how it went. When
// ctx ends the child is interrupted as by Ctrl-C, and tears its cluster
// down; runSeed returns once it has exited.
func (cr childRun) runSeed(ctx context.Context, seed uint64) seedResult {
	args := append(cr.args(seed), "--json-result", "/dev/fd/"+strconv.Itoa(resultFD), cr.file)
	out := runChild(ctx, cr.binary, args, cr.stopGrace)
	var r seedResult
	if out.startErr != nil {
		return exitedWithout(seed, out.startErr, "")
	}
	if len(out.result) == 0 || json.Unmarshal(out.result, &r) != nil {
		why := out.err
		if why == nil {
			why = errors.New("it wrote no result")
		}
		res := exitedWithout(seed, why, out.output)
		res.Wall, res.Interrupted = out.wall, ctx.Err() != nil
		return res
	}
	return r
}

// childOutcome is how a child process went: what it wrote on its result
// pipe, its output, and how it ended.
type childOutcome struct {
	result   []byte
	output   string
	err      error // from waiting for it and reading its result
	startErr error // it did not start
	wall     time.Duration
}

// runChild runs binary with args as a child process that writes its result
// on file descriptor resultFD (args name it as /dev/fd/3), and returns that
// result and the child's output. When ctx ends the child is interrupted as
// by Ctrl-C and given stopGrace to tear down what it made, then killed.
func runChild(ctx context.Context, binary string, args []string, stopGrace time.Duration) childOutcome {
	// The children die with the sweep (Pdeathsig), which the kernel ties
	// to the thread that forked them: that thread must live as long as
	// the child, so this goroutine keeps it until the child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	readResult, writeResult, err := os.Pipe()
	if err != nil {
		return childOutcome{startErr: fmt.Errorf("a pipe for the result: %w", err)}
	}
	defer readResult.Close()
	cmd := exec.CommandContext(ctx, binary, args...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.ExtraFiles = []*os.File{writeResult}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = stopGrace

	started := time.Now()
	if err := cmd.Start(); err != nil {
		writeResult.Close()
		return childOutcome{startErr: fmt.Errorf("starting %s: %w", binary, err)}
	}
	writeResult.Close() // the child has its own copy; EOF comes when it exits
	result, readErr := io.ReadAll(readResult)
	waitErr := cmd.Wait()
	return childOutcome{result: result, output: output.String(), err: errors.Join(waitErr, readErr), wall: time.Since(started)}
}

// exitedWithout is the result of a seed whose process ended without
// saying how the run went (it could not start, crashed or was killed).
func exitedWithout(seed uint64, why error, output string) seedResult {
	detail := fmt.Sprintf("csisim: the run of seed %d ended without a result: %v\n", seed, why)
	if tail := lastLines(output, 20); tail != "" {
		detail += "its last output:\n" + tail
	}
	return seedResult{Seed: seed, Steps: "no steps",
		Failure: &failure{Kind: "error", Cause: "exit", Summary: fmt.Sprintf("the run ended without a result: %v", why), Detail: detail}}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "") + "\n"
}
