// Command footprint records what of the machine a kind run could change,
// and says afterwards what it left changed: e2e/kind/run.sh takes a
// footprint before it starts anything and checks it after its cleanup.
//
//	go run ./e2e/kind/footprint save FILE --owned DIR [--owned DIR ...]
//	go run ./e2e/kind/footprint check FILE [--restore-sysctls]
//
// A footprint holds:
//   - the host's sysctls that the kind nodes' kubelets and kube-proxies
//     can write (they are not namespaced: kernel.*, vm.*, net.core.*,
//     net.netfilter.*, net.ipv4's own and its all/default interface
//     settings, ...), with --restore-sysctls written back when changed;
//   - the host's iptables rules (iptables-save, ip6tables-save);
//   - network links of the kinds a Docker daemon makes (bridges br-*,
//     docker*, veth*);
//   - mount points and attached loop devices;
//   - processes of a Docker daemon (dockerd, docker-proxy, the shims of its
//     containerd namespace moby), processes inside Docker containers
//     (their cgroup names docker), and processes whose command line names
//     a directory the run owns (--owned: its run directory, the cache);
//   - the disk space the owned directories take.
//
// check exits 1 and lists what differs when the machine was left changed
// (new links, rules, mounts, loop devices, processes; changed sysctls;
// owned directories grown by more than 64 MiB), 0 when it was not, 2 on
// bad usage.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || (args[0] != "save" && args[0] != "check") {
		fmt.Fprintln(stderr, "usage: footprint save FILE --owned DIR... | footprint check FILE [--restore-sysctls]")
		return 2
	}
	fs := flag.NewFlagSet("footprint "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var owned list
	fs.Var(&owned, "owned", "a directory the run owns (repeatable)")
	restore := fs.Bool("restore-sysctls", false, "write back the sysctls the run changed")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	file := args[1]
	if args[0] == "save" {
		fp, err := Take(Host{}, owned)
		if err == nil {
			err = save(file, fp)
		}
		if err != nil {
			fmt.Fprintf(stderr, "footprint: %v\n", err)
			return 1
		}
		return 0
	}
	before, err := load(file)
	if err != nil {
		fmt.Fprintf(stderr, "footprint: %v\n", err)
		return 2
	}
	if *restore {
		for _, line := range RestoreSysctls(Host{}, before) {
			fmt.Fprintf(stdout, "footprint: %s\n", line)
		}
	}
	after, err := Take(Host{}, before.Owned)
	if err != nil {
		fmt.Fprintf(stderr, "footprint: %v\n", err)
		return 1
	}
	diff := before.Diff(after)
	for _, d := range diff {
		fmt.Fprintf(stdout, "footprint: left changed: %s\n", d)
	}
	if len(diff) > 0 {
		return 1
	}
	fmt.Fprintln(stdout, "footprint: the machine is as it was found")
	return 0
}

type list []string

func (l *list) String() string     { return fmt.Sprint(*l) }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func save(file string, fp Footprint) error {
	b, err := json.MarshalIndent(fp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o600)
}

func load(file string) (Footprint, error) {
	var fp Footprint
	b, err := os.ReadFile(file)
	if err != nil {
		return fp, err
	}
	if err := json.Unmarshal(b, &fp); err != nil {
		return fp, fmt.Errorf("%s: %w", file, err)
	}
	if fp.Sysctls == nil {
		return fp, errors.New(file + ": not a footprint")
	}
	return fp, nil
}
