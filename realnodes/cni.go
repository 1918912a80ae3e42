package realnodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The CNI plugin of real nodes. A kubelet reports its node Ready only when
// the container runtime's network is ready, and containerd's CRI plugin is
// ready only with a CNI network configured; the pods themselves need no
// network (csisim's workload reads and writes its volumes). So each pod
// gets a network namespace of its own with lo up and an eth0 that is one
// end of a veth pair whose other end stays in the same namespace: a real
// interface and address, and nothing added to the host's network. (The
// dummy link type would be simpler; these machines' kernels lack it.)
//
// The plugin is csisim's own executable, run by containerd through a
// wrapper script in the CNI bin directory, as `csisim cni`; it speaks the
// CNI protocol (environment + network config on stdin, result on stdout)
// for its own type and for "loopback", which containerd always adds.

// cniVersion is the version of the CNI spec the plugin's results follow.
const cniVersion = "1.0.0"

// cniPluginType is the network config type of csisim's plugin.
const cniPluginType = "csisim-cni"

// cniConfig is the part of a network configuration the plugin reads.
type cniConfig struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	// Subnet holds the pods' addresses, e.g. 10.88.1.0/24 (one per node).
	Subnet string `json:"subnet"`
	// DataDir keeps the addresses given out, one file per address.
	DataDir string `json:"dataDir"`
}

type cniInterface struct {
	Name    string `json:"name"`
	Sandbox string `json:"sandbox,omitempty"`
}

type cniIP struct {
	Address   string `json:"address"`
	Interface *int   `json:"interface,omitempty"`
}

type cniResult struct {
	CNIVersion string         `json:"cniVersion"`
	Interfaces []cniInterface `json:"interfaces"`
	IPs        []cniIP        `json:"ips"`
}

type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
}

// CNI runs one invocation of the plugin: env is the CNI_* environment,
// stdin the network configuration; the result or error goes to stdout as
// JSON. The returned error has already been written there.
func CNI(env func(string) string, stdin io.Reader, stdout io.Writer) error {
	err := cni(env, stdin, stdout)
	if err != nil {
		_ = json.NewEncoder(stdout).Encode(cniError{CNIVersion: cniVersion, Code: 100, Msg: err.Error()})
	}
	return err
}

func cni(env func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd := env("CNI_COMMAND")
	if cmd == "VERSION" {
		return json.NewEncoder(stdout).Encode(map[string]any{"cniVersion": cniVersion,
			"supportedVersions": []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0"}})
	}
	var conf cniConfig
	if err := json.NewDecoder(stdin).Decode(&conf); err != nil {
		return fmt.Errorf("reading the network configuration: %w", err)
	}
	version := conf.CNIVersion
	if version == "" {
		version = cniVersion
	}
	netns, id := env("CNI_NETNS"), env("CNI_CONTAINERID")
	switch {
	case cmd == "CHECK", cmd == "GC", cmd == "STATUS":
		return nil
	case conf.Type == "loopback" && cmd == "ADD":
		if err := inNetns(netns, "link", "set", "lo", "up"); err != nil {
			return err
		}
		zero := 0
		return json.NewEncoder(stdout).Encode(cniResult{CNIVersion: version,
			Interfaces: []cniInterface{{Name: "lo", Sandbox: netns}},
			IPs:        []cniIP{{Address: "127.0.0.1/8", Interface: &zero}}})
	case conf.Type == "loopback":
		return nil
	case conf.Type != cniPluginType:
		return fmt.Errorf("csisim cni: unknown network type %q", conf.Type)
	case cmd == "ADD":
		ifname := env("CNI_IFNAME")
		if ifname == "" {
			ifname = "eth0"
		}
		addr, err := allocate(conf, id)
		if err != nil {
			return err
		}
		for _, args := range [][]string{
			{"link", "add", ifname, "type", "veth", "peer", "name", "csisim0"},
			{"addr", "add", addr.String(), "dev", ifname},
			{"link", "set", ifname, "up"},
			{"link", "set", "csisim0", "up"},
		} {
			if err := inNetns(netns, args...); err != nil {
				return err
			}
		}
		zero := 0
		return json.NewEncoder(stdout).Encode(cniResult{CNIVersion: version,
			Interfaces: []cniInterface{{Name: ifname, Sandbox: netns}},
			IPs:        []cniIP{{Address: addr.String(), Interface: &zero}}})
	case cmd == "DEL":
		// The namespace (and the links in it) go with the sandbox; only
		// the address is given back.
		return release(conf, id)
	}
	return fmt.Errorf("csisim cni: unknown command %q", cmd)
}

// inNetns runs ip(8) in the network namespace at path netns.
func inNetns(netns string, args ...string) error {
	if netns == "" {
		return errors.New("csisim cni: CNI_NETNS is not set")
	}
	out, err := exec.Command("nsenter", append([]string{"--net=" + netns, "ip"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s in %s: %v: %s", strings.Join(args, " "), netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// allocate gives the container the lowest free address of the subnet
// (network and gateway addresses left out), or the one it already has.
// An address is taken by creating its file exclusively, so two ADDs at
// once cannot get the same one.
func allocate(conf cniConfig, id string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(conf.Subnet)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("csisim cni: subnet %q: %w", conf.Subnet, err)
	}
	if err := os.MkdirAll(conf.DataDir, 0o755); err != nil {
		return netip.Prefix{}, fmt.Errorf("csisim cni: %w", err)
	}
	if prev, err := os.ReadFile(filepath.Join(conf.DataDir, "container-"+id)); err == nil {
		if a, err := netip.ParseAddr(strings.TrimSpace(string(prev))); err == nil {
			return netip.PrefixFrom(a, prefix.Bits()), nil
		}
	}
	for a := prefix.Masked().Addr().Next().Next(); prefix.Contains(a); a = a.Next() {
		f, err := os.OpenFile(filepath.Join(conf.DataDir, "ip-"+a.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("csisim cni: %w", err)
		}
		_, werr := f.WriteString(id)
		if err := errors.Join(werr, f.Close(), os.WriteFile(filepath.Join(conf.DataDir, "container-"+id), []byte(a.String()), 0o644)); err != nil {
			return netip.Prefix{}, fmt.Errorf("csisim cni: %w", err)
		}
		return netip.PrefixFrom(a, prefix.Bits()), nil
	}
	return netip.Prefix{}, fmt.Errorf("csisim cni: no free address in %s", prefix)
}

// release gives back the address of container id, if it has one.
func release(conf cniConfig, id string) error {
	idFile := filepath.Join(conf.DataDir, "container-"+id)
	prev, err := os.ReadFile(idFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("csisim cni: %w", err)
	}
	err = os.Remove(filepath.Join(conf.DataDir, "ip-"+strings.TrimSpace(string(prev))))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("csisim cni: %w", err)
	}
	return os.Remove(idFile)
}

// writeCNIConfig writes the network configuration list and the wrapper
// scripts containerd runs (one per plugin type, each execing `csisim cni`)
// to confDir and binDir.
func writeCNIConfig(confDir, binDir, dataDir, subnet, csisim string) error {
	for _, d := range []string{confDir, binDir, dataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	list := map[string]any{
		"cniVersion": cniVersion,
		"name":       "csisim",
		"plugins":    []any{map[string]any{"type": cniPluginType, "subnet": subnet, "dataDir": dataDir}},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-csisim.conflist"), data, 0o644); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q cni\n", csisim)
	for _, name := range []string{cniPluginType, "loopback"} {
		if err := os.WriteFile(filepath.Join(binDir, name), []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}
