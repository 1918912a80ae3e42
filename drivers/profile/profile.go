// Package profile reads driver profiles: YAML files that tell csisim how to
// start a CSI driver, what csisim cannot ask the running driver (its
// CSIDriver object's fields, what it can do that CSI has no capability
// for), and which StorageClass parameters and flags the library's
// scenarios should use with it. A profile is to csisim what
// testdriver.yaml (DriverInfo) is to the Kubernetes e2e storage framework:
// with it, one library of scenarios runs against any driver, and a
// scenario whose needs the driver lacks is skipped with the reason. What
// the driver reports of itself is asked (drivers/driverinfo) and completes
// the profile (Complete); a profile that contradicts it is refused
// (Contradictions). docs/profiles/README.md documents every key.
//
// Profiles for csisim's own driver, its mock and the csi-test mock driver
// live in drivers/profiles/.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/csisim/csisim/drivers/driverinfo"
	"sigs.k8s.io/yaml"
)

// Layout says how a driver's processes are laid out.
type Layout string

const (
	// Split: the controller plugin is a process of its own (with {nodeID}
	// "controller"), and every node runs a node plugin; they share state
	// only through the storage backend under {root}.
	Split Layout = "split"
	// Combined: one process per node serves the identity, controller and
	// node services; the first node's process is also the controller
	// plugin, as csi-driver-host-path's single pod is.
	Combined Layout = "combined"
)

// Command is how to run one driver process. Args and Env may contain the
// placeholders {endpoint}, {nodeID}, {stateDir}, {root}, {zone} and
// {driverName}; {csisim} in Path stands for the csisim binary.
type Command struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
}

// Start says how to start the driver.
type Start struct {
	Layout Layout `json:"layout"`
	// Command runs every process of a combined driver.
	Command *Command `json:"command,omitempty"`
	// Controller and Node run a split driver's controller and node plugins.
	Controller *Command `json:"controller,omitempty"`
	Node       *Command `json:"node,omitempty"`
	// Mock runs csisim's in-process mock driver instead of a process.
	Mock bool `json:"mock,omitempty"`
	// Build, if set, is a Go package to build the driver binary from, as
	// `go build`'s argument (e.g. a module path@version); {built} in a
	// command's Path stands for the binary it makes.
	Build string `json:"build,omitempty"`
}

// Flags are extra driver arguments for what a scenario asks of the
// cluster; each may contain {zone}, {capacity} or {limit}. A scenario that
// needs one the profile lacks is skipped.
type Flags struct {
	// Zone is added to a node plugin whose node has a zone.
	Zone []string `json:"zone,omitempty"`
	// Capacity is added to every plugin when a scenario sets a capacity.
	Capacity []string `json:"capacity,omitempty"`
	// VolumeLimit is added to every node plugin when a scenario sets a
	// per-node volume limit.
	VolumeLimit []string `json:"volumeLimit,omitempty"`
	// MultiNode is added to every plugin when a scenario needs the
	// MULTI_NODE_* access modes.
	MultiNode []string `json:"multiNode,omitempty"`
	// Extra are named flag sets a scenario may ask for by name.
	Extra map[string][]string `json:"extra,omitempty"`
}

// StorageClass is what the library's StorageClass for this driver holds.
type StorageClass struct {
	// Parameters of the class; the driver's own (e.g. kind: directory).
	Parameters map[string]string `json:"parameters,omitempty"`
	// BlockParameters, if set, replace Parameters for a class of raw block
	// volumes (csisim's driver: kind: block).
	BlockParameters map[string]string `json:"blockParameters,omitempty"`
	// FSType is csi.storage.k8s.io/fstype, if the driver needs one.
	FSType string `json:"fsType,omitempty"`
}

// Profile is one driver profile: what csisim cannot ask the driver. What
// the running driver says of itself — its name, its capabilities, its
// nodes' topology — csisim asks it, as the sidecars and the kubelet do
// (Complete, Asked); a profile may still declare an asked capability, and
// a run whose driver answers otherwise is refused (Contradictions).
type Profile struct {
	// Name is the driver name GetPluginInfo reports, and the provisioner
	// of its StorageClass and the name of its CSIDriver.
	Name string `json:"name"`
	// Description says what the driver is, for reports.
	Description string `json:"description,omitempty"`
	Start       Start  `json:"start"`
	// Capabilities maps a capability to whether the driver has it. An
	// asked one (Asked) not listed is the driver's answer; any other not
	// listed is false.
	Capabilities map[Capability]bool `json:"capabilities,omitempty"`
	// TopologyKeys are the keys of the driver's topology segments, the
	// first being the one scenarios constrain on; default: the keys the
	// first node's NodeGetInfo reports.
	TopologyKeys []string `json:"topologyKeys,omitempty"`
	// AccessModes are the PersistentVolume access modes the driver
	// supports, e.g. [ReadWriteOnce, ReadWriteOncePod]: for the reader
	// only; the multiNode and singleNodeMultiWriter capabilities decide.
	AccessModes []string `json:"accessModes,omitempty"`
	// FSGroupPolicy is csiDriver.fsGroupPolicy, as older profiles say it.
	FSGroupPolicy string `json:"fsGroupPolicy,omitempty"`
	// CSIDriver are the fields of the driver's CSIDriver object.
	CSIDriver    CSIDriver    `json:"csiDriver,omitempty"`
	StorageClass StorageClass `json:"storageClass,omitempty"`
	Flags        Flags        `json:"flags,omitempty"`
	// Images maps a container image of the driver's deployment manifests
	// (csisim run --deploy) — its full reference, or its repository
	// without tag or digest — to the local command that runs it; the node
	// plugin's command must be that command.
	Images map[string]string `json:"images,omitempty"`
	// MaxNodes, if not 0, is how many nodes the driver can serve at once: a
	// driver whose node plugins all answer NodeGetInfo with one node ID, or
	// keep the volumes in one process, serves one. A scenario with more
	// nodes is skipped.
	MaxNodes int `json:"maxNodes,omitempty"`
	// NotSupported lists library scenarios this driver cannot run, with
	// the reason, for what the capabilities cannot express.
	NotSupported map[string]string `json:"notSupported,omitempty"`
	// Sanity tailors the csi-sanity run of the driver.
	Sanity Sanity `json:"sanity,omitempty"`

	// File is the file the profile was read from.
	File string `json:"-"`
	// Reported is what the running driver said of itself, once it was
	// asked (Complete); nil before.
	Reported *driverinfo.Info `json:"-"`
}

// CSIDriver are the fields of the driver's CSIDriver object: how its
// deployment registers it with Kubernetes, which the driver itself is
// never asked. The library's CSIDriver (Objects, ${driver.*}) has them.
type CSIDriver struct {
	// AttachRequired: the attach/detach controller makes VolumeAttachments
	// for the driver's volumes. Default: whether the driver reports
	// PUBLISH_UNPUBLISH_VOLUME (Kubernetes' own default is true; with true
	// and no PUBLISH_UNPUBLISH_VOLUME the external-attacher marks them
	// attached without a call).
	AttachRequired *bool `json:"attachRequired,omitempty"`
	// PodInfoOnMount: the kubelet passes the pod's name, namespace, UID
	// and service account to NodePublishVolume (capabilities.podInfo).
	PodInfoOnMount bool `json:"podInfoOnMount,omitempty"`
	// FSGroupPolicy: None, File or ReadWriteOnceWithFSType (the default).
	FSGroupPolicy string `json:"fsGroupPolicy,omitempty"`
	// VolumeLifecycleModes: Persistent (the default) and Ephemeral for CSI
	// inline volumes (capabilities.ephemeral).
	VolumeLifecycleModes []string `json:"volumeLifecycleModes,omitempty"`
	// TokenRequests: the service account tokens the kubelet passes to
	// NodePublishVolume, by audience.
	TokenRequests []TokenRequest `json:"tokenRequests,omitempty"`
	// RequiresRepublish: the kubelet calls NodePublishVolume again
	// periodically (for tokens that expire).
	RequiresRepublish bool `json:"requiresRepublish,omitempty"`
	// SELinuxMount: the driver mounts with -o context.
	SELinuxMount bool `json:"seLinuxMount,omitempty"`
}

// TokenRequest is a service account token the kubelet requests for the
// driver.
type TokenRequest struct {
	Audience          string `json:"audience"`
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// Sanity tailors the csi-sanity run (drivers/sanityrun) of the driver.
type Sanity struct {
	// Skip maps a regular expression on a csi-sanity spec's full text (as
	// ginkgo's --skip matches it) to why the driver does not pass it: a
	// known bug, a behaviour csi-sanity expects that the driver does not
	// have. Matching specs are reported skipped with the reason.
	Skip map[string]string `json:"skip,omitempty"`
}

// fsGroupPolicy is the CSIDriver's fsGroupPolicy as the profile declares
// it, "" for none.
func (p *Profile) fsGroupPolicy() string {
	if p.CSIDriver.FSGroupPolicy != "" {
		return p.CSIDriver.FSGroupPolicy
	}
	return p.FSGroupPolicy
}

// fsGroupPolicyOrDefault is the CSIDriver's fsGroupPolicy, Kubernetes'
// default ReadWriteOnceWithFSType when the profile sets none.
func (p *Profile) fsGroupPolicyOrDefault() string {
	if policy := p.fsGroupPolicy(); policy != "" {
		return policy
	}
	return "ReadWriteOnceWithFSType"
}

// AttachRequired is the CSIDriver's attachRequired: csiDriver.attachRequired,
// else whether the driver has ControllerPublishVolume, else (not asked
// yet, and not declared) Kubernetes' default, true.
func (p *Profile) AttachRequired() bool {
	if p.CSIDriver.AttachRequired != nil {
		return *p.CSIDriver.AttachRequired
	}
	if has, known := p.Known(Attach); known {
		return has
	}
	return true
}

// LifecycleModes are the CSIDriver's volumeLifecycleModes:
// csiDriver.volumeLifecycleModes, else Persistent, and Ephemeral with
// capabilities.ephemeral.
func (p *Profile) LifecycleModes() []string {
	modes := slices.Clone(p.CSIDriver.VolumeLifecycleModes)
	if len(modes) == 0 {
		modes = []string{"Persistent"}
	}
	if p.Capabilities[Ephemeral] && !slices.Contains(modes, "Ephemeral") {
		modes = append(modes, "Ephemeral")
	}
	return modes
}

// Vars are the values scenarios see as ${driver.<key>}: name,
// storageClass (the library's class name for the driver), topologyKey,
// provisioner (the same as name), fsGroupPolicy, attachRequired and
// parameter.<key> for each StorageClass parameter.
func (p *Profile) Vars() map[string]string {
	v := map[string]string{
		"name":           p.Name,
		"provisioner":    p.Name,
		"storageClass":   StorageClassName,
		"attachRequired": fmt.Sprint(p.AttachRequired()),
		"fsGroupPolicy":  p.fsGroupPolicyOrDefault(),
		"podInfoOnMount": fmt.Sprint(p.Has(PodInfo)),
	}
	if len(p.TopologyKeys) > 0 {
		v["topologyKey"] = p.TopologyKeys[0]
	}
	for k, val := range p.StorageClass.Parameters {
		v["parameter."+k] = val
	}
	return v
}

// StorageClassName is the name of the StorageClass the library makes for
// the driver under test.
const StorageClassName = "csisim-sc"

// Load reads and checks the profile in file. Unknown keys are an error, so
// that a typo cannot silently drop a setting.
func Load(file string) (*Profile, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("driver profile: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver profile %s: %w", file, err)
	}
	p.File = file
	if err := p.resolveRelativePaths(filepath.Dir(file)); err != nil {
		return nil, fmt.Errorf("driver profile %s: %w", file, err)
	}
	return p, nil
}

// resolveRelativePaths makes a command path relative to the profile's
// directory (./run.sh, helpers/start) absolute, so that a profile that
// ships a script beside it runs it from any working directory. A name
// without a slash stays a name looked up on PATH, and a path that starts
// with a placeholder ({csisim}, {built}) is left to the placeholder.
func (p *Profile) resolveRelativePaths(dir string) error {
	for _, c := range []*Command{p.Start.Command, p.Start.Controller, p.Start.Node} {
		if c == nil || !strings.ContainsRune(c.Path, '/') || filepath.IsAbs(c.Path) || strings.HasPrefix(c.Path, "{") {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, c.Path))
		if err != nil {
			return fmt.Errorf("start: command path %s: %w", c.Path, err)
		}
		c.Path = abs
	}
	return nil
}

// Parse reads and checks a profile.
func Parse(data []byte) (*Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &p); err != nil {
		return nil, decodeError(data, err)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Profile) check() error {
	var errs []error
	if p.Name == "" {
		errs = append(errs, errors.New("name: required (the driver name GetPluginInfo reports)"))
	}
	switch p.Start.Layout {
	case Split:
		if !p.Start.Mock && (p.Start.Controller == nil || p.Start.Node == nil) {
			errs = append(errs, errors.New("start: layout split needs controller and node commands"))
		}
		if p.Start.Command != nil {
			errs = append(errs, errors.New("start.command: only for layout combined; split uses controller and node"))
		}
	case Combined:
		if !p.Start.Mock && p.Start.Command == nil {
			errs = append(errs, errors.New("start: layout combined needs command"))
		}
		if p.Start.Controller != nil || p.Start.Node != nil {
			errs = append(errs, errors.New("start.controller/node: only for layout split; combined uses command"))
		}
	default:
		errs = append(errs, fmt.Errorf("start.layout: %q: want split or combined", p.Start.Layout))
	}
	for c := range p.Capabilities {
		if !slices.Contains(Capabilities, c) {
			errs = append(errs, fmt.Errorf("capabilities.%s: unknown capability; known: %s", c, capabilityList()))
		}
	}
	for _, c := range []*Command{p.Start.Command, p.Start.Controller, p.Start.Node} {
		if c != nil && strings.Contains(c.Path, "{built}") && p.Start.Build == "" {
			errs = append(errs, errors.New("start: a command runs {built}, but start.build does not say what to build"))
			break
		}
	}
	if p.Has(Zones) && len(p.Flags.Zone) == 0 {
		errs = append(errs, errors.New("flags.zone: required with capabilities.zones (how the driver learns a node's zone)"))
	}
	errs = append(errs, p.checkCSIDriver()...)
	for expr, why := range p.Sanity.Skip {
		if _, err := regexp.Compile(expr); err != nil {
			errs = append(errs, fmt.Errorf("sanity.skip %q: %w", expr, err))
		}
		if strings.TrimSpace(why) == "" {
			errs = append(errs, fmt.Errorf("sanity.skip %q: say why the driver does not pass it", expr))
		}
	}
	return errors.Join(errs...)
}

// checkCSIDriver checks the CSIDriver fields, and that the keys older
// profiles say some of them with agree with csiDriver.
func (p *Profile) checkCSIDriver() []error {
	var errs []error
	d := p.CSIDriver
	if p.FSGroupPolicy != "" && d.FSGroupPolicy != "" && p.FSGroupPolicy != d.FSGroupPolicy {
		errs = append(errs, fmt.Errorf("fsGroupPolicy %s and csiDriver.fsGroupPolicy %s: say it once, in csiDriver", p.FSGroupPolicy, d.FSGroupPolicy))
	}
	if policy := p.fsGroupPolicy(); policy != "" && !slices.Contains([]string{"None", "File", "ReadWriteOnceWithFSType"}, policy) {
		errs = append(errs, fmt.Errorf("csiDriver.fsGroupPolicy %q: want None, File or ReadWriteOnceWithFSType", policy))
	}
	for _, m := range d.VolumeLifecycleModes {
		if m != "Persistent" && m != "Ephemeral" {
			errs = append(errs, fmt.Errorf("csiDriver.volumeLifecycleModes: %q: want Persistent or Ephemeral", m))
		}
	}
	if declared, ok := p.Capabilities[PodInfo]; ok && !declared && d.PodInfoOnMount {
		errs = append(errs, errors.New("capabilities.podInfo false and csiDriver.podInfoOnMount true: say it once, in csiDriver"))
	}
	if declared, ok := p.Capabilities[Ephemeral]; ok && !declared && slices.Contains(d.VolumeLifecycleModes, "Ephemeral") {
		errs = append(errs, errors.New("capabilities.ephemeral false and csiDriver.volumeLifecycleModes Ephemeral: say it once, in csiDriver"))
	}
	for i, t := range d.TokenRequests {
		if t.Audience == "" {
			errs = append(errs, fmt.Errorf("csiDriver.tokenRequests[%d].audience: required", i))
		}
	}
	return errs
}

// Dir is where the shipped profiles live, relative to the repository root.
const Dir = "drivers/profiles"

// Resolve finds a profile by file name or by the name of a shipped profile
// ("csisim", "mock", "csi-test-mock"), looking in dir.
func Resolve(nameOrFile, dir string) (string, error) {
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return nameOrFile, nil
	}
	file := filepath.Join(dir, nameOrFile+".yaml")
	if _, err := os.Stat(file); err != nil {
		known, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for i, k := range known {
			known[i] = strings.TrimSuffix(filepath.Base(k), ".yaml")
		}
		sort.Strings(known)
		return "", fmt.Errorf("driver profile %q: no such file; the shipped profiles are %s", nameOrFile, strings.Join(known, ", "))
	}
	return file, nil
}

// ownDriverFlags are the flags of csisim's own driver that every start
// command of it sets (launch.OurDriver), with a value each.
var ownDriverFlags = map[string]bool{"--endpoint": true, "--node-id": true, "--root": true, "--state-dir": true, "--mode": true, "--driver-name": true}

// OwnDriverArgs returns, for a profile that runs csisim's own driver
// ({csisim} driver ...) in split layout, the arguments its commands add to
// the ones every start of that driver has: what makes it this profile's
// driver (csisim-file: --no-attach --no-stage). The backends that start
// csisim's own driver themselves (the real control plane) take a profile
// so. It is an error for any other profile, or one whose controller and
// node commands add different arguments.
func (p *Profile) OwnDriverArgs() ([]string, error) {
	s := p.Start
	if s.Mock || s.Layout != Split || s.Controller == nil || s.Node == nil {
		return nil, errors.New("it does not run csisim's own driver in split layout")
	}
	extra := func(c *Command) ([]string, error) {
		if c.Path != "{csisim}" || len(c.Args) == 0 || c.Args[0] != "driver" || len(c.Env) > 0 {
			return nil, fmt.Errorf("it runs %s, not csisim's own driver ({csisim} driver ..., no env)", c.Path)
		}
		var out []string
		for i := 1; i < len(c.Args); i++ {
			if ownDriverFlags[c.Args[i]] {
				i++ // and its value
				continue
			}
			out = append(out, c.Args[i])
		}
		return out, nil
	}
	controller, err := extra(s.Controller)
	if err != nil {
		return nil, err
	}
	node, err := extra(s.Node)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(controller, node) {
		return nil, fmt.Errorf("its controller adds %q and its node %q to csisim's driver; they must be the same", controller, node)
	}
	return node, nil
}
