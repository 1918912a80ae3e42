package manifests

// The flags of each kubernetes-csi sidecar as its binary defines them, at
// the versions realkube builds (deploy.ProvisionerImage and the others):
// names, kinds and defaults read from each one's main — written here as
// tables of our own, not taken from the sidecars' code. A container's args
// are parsed against its sidecar's table with the same flag package its
// binary uses (Go's flag, or pflag for the external-provisioner), so that
// a flag the binary does not define fails with the binary's own words.

import (
	"errors"
	goflag "flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// jsonLogFlags are the flags logs/api/v1 adds when the JSON log format is
// registered, as every sidecar's main registers it (it imports
// k8s.io/component-base/logs/json/register, which csisim does not, to
// keep zap out of its build).
var jsonLogFlags = []flagDef{{"log-json-split-stream", boolFlag, "false"}, {"log-json-info-buffer-size", stringFlag, "0"}}

// flagKind is how a flag's value is parsed.
type flagKind int

const (
	boolFlag flagKind = iota
	stringFlag
	durationFlag
	intFlag
	uintFlag
	float32Flag
	float64Flag
	mapBoolFlag // cliflag.MapStringBool: --feature-gates
	labelsFlag  // csi-lib-utils standardflags' key:value list
)

// flagDef is one flag of a sidecar: name, kind, default.
type flagDef struct {
	name string
	kind flagKind
	def  string
}

// commonFlags are csi-lib-utils v0.24/v0.25 standardflags.RegisterCommonFlags
// (standardflags/flags.go), which the provisioner, attacher, resizer,
// snapshotter and health monitor register.
var commonFlags = []flagDef{
	{"version", boolFlag, "false"}, {"kubeconfig", stringFlag, ""}, {"csi-address", stringFlag, "/run/csi/socket"},
	{"leader-election", boolFlag, "false"}, {"leader-election-namespace", stringFlag, ""},
	{"leader-election-lease-duration", durationFlag, "15s"}, {"leader-election-renew-deadline", durationFlag, "10s"},
	{"leader-election-retry-period", durationFlag, "5s"}, {"leader-election-labels", labelsFlag, ""},
	{"kube-api-qps", float64Flag, "5"}, {"kube-api-burst", intFlag, "10"}, {"http-endpoint", stringFlag, ""},
	{"metrics-address", stringFlag, ""}, {"metrics-path", stringFlag, "/metrics"},
}

// sidecarFlags are each sidecar's own flags, by image name, besides
// commonFlags (where withCommon) and the logging flags every one of them
// adds (component-base logs/api/v1 AddGoFlags or AddFlags).
var sidecarFlags = map[string]struct {
	flags      []flagDef
	withCommon bool
	// pflag: the binary parses with spf13/pflag (its Go flags added to
	// it), which words an unknown flag differently.
	pflag bool
}{
	// external-provisioner v6.4.0 cmd/csi-provisioner/csi-provisioner.go
	"csi-provisioner": {withCommon: true, pflag: true, flags: []flagDef{
		{"master", stringFlag, ""}, {"volume-name-prefix", stringFlag, "pvc"}, {"volume-name-uuid-length", intFlag, "-1"},
		{"retry-interval-start", durationFlag, "1s"}, {"retry-interval-max", durationFlag, "5m0s"},
		{"worker-threads", uintFlag, "100"}, {"cloning-protection-threads", uintFlag, "1"},
		{"snapshot-orphan-sweep-interval", durationFlag, "5m0s"}, {"capacity-threads", uintFlag, "1"},
		{"timeout", durationFlag, "10s"}, {"strict-topology", boolFlag, "false"}, {"immediate-topology", boolFlag, "true"},
		{"extra-create-metadata", boolFlag, "false"}, {"enable-pprof", boolFlag, "false"}, {"default-fstype", stringFlag, ""},
		{"kube-api-capacity-qps", float32Flag, "1"}, {"kube-api-capacity-burst", intFlag, "5"},
		{"enable-capacity", boolFlag, "false"}, {"capacity-for-immediate-binding", boolFlag, "false"},
		{"capacity-poll-interval", durationFlag, "1m0s"}, {"capacity-ownerref-level", intFlag, "1"},
		{"node-deployment", boolFlag, "false"}, {"node-deployment-immediate-binding", boolFlag, "true"},
		{"node-deployment-base-delay", durationFlag, "20s"}, {"node-deployment-max-delay", durationFlag, "1m0s"},
		{"controller-publish-readonly", boolFlag, "false"}, {"prevent-volume-mode-conversion", boolFlag, "true"},
		{"feature-gates", mapBoolFlag, ""},
	}},
	// external-attacher v4.13.0 cmd/csi-attacher/main.go
	"csi-attacher": {withCommon: true, flags: []flagDef{
		{"resync", durationFlag, "10m0s"}, {"timeout", durationFlag, "15s"},
		{"retry-interval-start", durationFlag, "1s"}, {"retry-interval-max", durationFlag, "5m0s"},
		{"worker-threads", uintFlag, "10"}, {"max-entries", intFlag, "0"}, {"default-fstype", stringFlag, ""},
		{"reconcile-sync", durationFlag, "1m0s"}, {"max-grpc-log-length", intFlag, "-1"}, {"feature-gates", mapBoolFlag, ""},
	}},
	// external-resizer v2.3.0 cmd/csi-resizer/main.go
	"csi-resizer": {withCommon: true, flags: []flagDef{
		{"master", stringFlag, ""}, {"resync-period", durationFlag, "10m0s"}, {"workers", intFlag, "10"},
		{"extra-modify-metadata", boolFlag, "false"}, {"timeout", durationFlag, "10s"},
		{"resize-timeout", durationFlag, "10s"}, {"modify-timeout", durationFlag, "10s"},
		{"retry-interval-start", durationFlag, "1s"}, {"retry-interval-max", durationFlag, "5m0s"},
		{"handle-volume-inuse-error", boolFlag, "true"}, {"feature-gates", mapBoolFlag, ""},
	}},
	// external-snapshotter v8.7.0 cmd/csi-snapshotter/main.go
	"csi-snapshotter": {withCommon: true, flags: []flagDef{
		{"resync-period", durationFlag, "15m0s"}, {"snapshot-name-prefix", stringFlag, "snapshot"},
		{"snapshot-name-uuid-length", intFlag, "-1"}, {"worker-threads", intFlag, "10"}, {"timeout", durationFlag, "1m0s"},
		{"extra-create-metadata", boolFlag, "false"}, {"retry-interval-start", durationFlag, "1s"},
		{"retry-interval-max", durationFlag, "5m0s"}, {"node-deployment", boolFlag, "false"},
		{"groupsnapshot-name-prefix", stringFlag, "groupsnapshot"}, {"groupsnapshot-name-uuid-length", intFlag, "-1"},
		{"feature-gates", mapBoolFlag, ""},
	}},
	// external-snapshotter v8.7.0 cmd/snapshot-controller/main.go: flags of
	// its own, not csi-lib-utils' (it talks to no driver).
	"snapshot-controller": {flags: []flagDef{
		{"kubeconfig", stringFlag, ""}, {"resync-period", durationFlag, "15m0s"}, {"version", boolFlag, "false"},
		{"worker-threads", intFlag, "10"}, {"leader-election", boolFlag, "false"}, {"leader-election-namespace", stringFlag, ""},
		{"leader-election-lease-duration", durationFlag, "15s"}, {"leader-election-renew-deadline", durationFlag, "10s"},
		{"leader-election-retry-period", durationFlag, "5s"}, {"kube-api-qps", float64Flag, "5"}, {"kube-api-burst", intFlag, "10"},
		{"http-endpoint", stringFlag, ""}, {"metrics-path", stringFlag, "/metrics"},
		{"retry-interval-start", durationFlag, "1s"}, {"retry-interval-max", durationFlag, "5m0s"},
		{"enable-distributed-snapshotting", boolFlag, "false"}, {"prevent-volume-mode-conversion", boolFlag, "true"},
		{"retry-crd-interval-max", durationFlag, "30s"}, {"feature-gates", mapBoolFlag, ""},
	}},
	// external-health-monitor v0.18.0 cmd/csi-external-health-monitor-controller/main.go
	"csi-external-health-monitor-controller": {withCommon: true, flags: []flagDef{
		{"monitor-interval", durationFlag, "1m0s"}, {"resync", durationFlag, "10m0s"}, {"timeout", durationFlag, "15s"},
		{"list-volumes-interval", durationFlag, "5m0s"}, {"volume-list-add-interval", durationFlag, "5m0s"},
		{"node-list-add-interval", durationFlag, "5m0s"}, {"worker-threads", uintFlag, "10"},
		{"enable-node-watcher", boolFlag, "false"},
	}},
	// node-driver-registrar v2.17.0 cmd/csi-node-driver-registrar/main.go:
	// its own flags, not csi-lib-utils'.
	"csi-node-driver-registrar": {flags: []flagDef{
		{"connection-timeout", durationFlag, "0s"}, {"timeout", durationFlag, "1s"}, {"csi-address", stringFlag, "/run/csi/socket"},
		{"plugin-registration-path", stringFlag, "/registration"}, {"kubelet-registration-path", stringFlag, ""},
		{"health-port", intFlag, "0"}, {"http-endpoint", stringFlag, ""}, {"version", boolFlag, "false"},
		{"mode", stringFlag, ""}, {"enable-pprof", boolFlag, "false"},
	}},
	// livenessprobe v2.19.0 cmd/livenessprobe/main.go
	"livenessprobe": {flags: []flagDef{
		{"probe-timeout", durationFlag, "3s"}, {"csi-address", stringFlag, "/run/csi/socket"}, {"health-port", stringFlag, "9808"},
		{"metrics-address", stringFlag, ""}, {"http-endpoint", stringFlag, ""}, {"metrics-path", stringFlag, "/metrics"},
	}},
}

// parseFlags parses args as the sidecar's binary does and returns every
// flag's value (set or default) by name and the names args set; the error
// is the binary's own message for what it refuses (Go's flag package:
// "flag provided but not defined: -foo"; pflag: "unknown flag: --foo").
func parseFlags(sidecar string, args []string) (values map[string]string, set []string, err error) {
	table, ok := sidecarFlags[sidecar]
	if !ok {
		return nil, nil, fmt.Errorf("no flag table for sidecar %s", sidecar)
	}
	common := []flagDef{}
	if table.withCommon {
		common = commonFlags
	}
	gfs := goflag.NewFlagSet(sidecar, goflag.ContinueOnError)
	gfs.SetOutput(io.Discard)
	values = map[string]string{}
	if table.pflag {
		// The external-provisioner defines its own flags with pflag and
		// adds csi-lib-utils' Go flags to them (AddGoFlagSet).
		pfs := pflag.NewFlagSet(sidecar, pflag.ContinueOnError)
		pfs.SetOutput(io.Discard)
		for _, d := range table.flags {
			f := pfs.VarPF(newValue(d, false), d.name, "", "")
			if d.kind == boolFlag {
				f.NoOptDefVal = "true"
			}
		}
		for _, d := range common {
			gfs.Var(newValue(d, true), d.name, "")
		}
		logsapi.AddFlags(logsapi.NewLoggingConfiguration(), pfs)
		for _, d := range jsonLogFlags {
			gfs.Var(newValue(d, true), d.name, "")
		}
		pfs.AddGoFlagSet(gfs)
		err = pfs.Parse(args)
		pfs.VisitAll(func(f *pflag.Flag) { values[f.Name] = f.Value.String() })
		pfs.Visit(func(f *pflag.Flag) { set = append(set, f.Name) })
		return values, set, err
	}
	for _, d := range append(append([]flagDef{}, common...), table.flags...) {
		gfs.Var(newValue(d, true), d.name, "")
	}
	logsapi.AddGoFlags(logsapi.NewLoggingConfiguration(), gfs)
	for _, d := range jsonLogFlags {
		gfs.Var(newValue(d, true), d.name, "")
	}
	err = gfs.Parse(args)
	gfs.VisitAll(func(f *goflag.Flag) { values[f.Name] = f.Value.String() })
	gfs.Visit(func(f *goflag.Flag) { set = append(set, f.Name) })
	return values, set, err
}

// value is a flag's value of any kind, kept as its text once parsed.
type value struct {
	kind flagKind
	text string
	// goFlag: the binary defines it with Go's flag package, whose numbers,
	// durations and bools fail to parse as "parse error".
	goFlag bool
}

func newValue(d flagDef, goFlag bool) *value {
	return &value{kind: d.kind, text: d.def, goFlag: goFlag}
}

func (v *value) String() string { return v.text }

// Type names the kind for pflag's messages.
func (v *value) Type() string {
	return [...]string{"bool", "string", "duration", "int", "uint", "float32", "float64", "mapStringBool", "stringMap"}[v.kind]
}

// IsBoolFlag lets a bool flag stand alone (--leader-election), as Go's
// flag package and pflag allow.
func (v *value) IsBoolFlag() bool { return v.kind == boolFlag }

// Set parses s as the flag's kind; the error is what the flag packages
// wrap into "invalid value ... for flag ...".
func (v *value) Set(s string) error {
	var err error
	switch v.kind {
	case boolFlag:
		var b bool
		b, err = strconv.ParseBool(s)
		s = strconv.FormatBool(b)
	case durationFlag:
		var d time.Duration
		d, err = time.ParseDuration(s)
		s = d.String()
	case intFlag:
		_, err = strconv.ParseInt(s, 0, strconv.IntSize)
	case uintFlag:
		_, err = strconv.ParseUint(s, 0, strconv.IntSize)
	case float32Flag:
		_, err = strconv.ParseFloat(s, 32)
	case float64Flag:
		_, err = strconv.ParseFloat(s, 64)
	case mapBoolFlag:
		s, err = setMapBool(v.text, s)
	case labelsFlag:
		err = checkLabels(s)
	}
	if err != nil && v.goFlag && v.kind <= float64Flag && v.kind != stringFlag {
		return errors.New("parse error") // Go's flag package's errParse
	}
	if err != nil {
		return err
	}
	v.text = s
	return nil
}

// setMapBool adds the comma-separated key=bool pairs of s to old, as
// cliflag.MapStringBool does (k8s.io/component-base/cli/flag
// map_string_bool.go), returning the whole map as key=value pairs.
func setMapBool(old, s string) (string, error) {
	pairs := []string{}
	if old != "" {
		pairs = strings.Split(old, ",")
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return "", fmt.Errorf("malformed pair, expect string=bool")
		}
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return "", fmt.Errorf("invalid value of %s: %s, err: %v", strings.TrimSpace(k), val, err)
		}
		pairs = append(pairs, strings.TrimSpace(k)+"="+strconv.FormatBool(b))
	}
	return strings.Join(pairs, ","), nil
}

// checkLabels checks a --leader-election-labels list as csi-lib-utils'
// stringMap.Set does.
func checkLabels(s string) error {
	for _, item := range strings.Split(s, ",") {
		if len(strings.Split(item, ":")) != 2 {
			return fmt.Errorf("malformed item in list of labels: %s", item)
		}
	}
	return nil
}
