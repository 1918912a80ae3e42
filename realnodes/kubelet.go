package realnodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// kubeletConfiguration is the KubeletConfiguration of one real node: bound
// to 127.0.0.1 on ports of its own, everything it writes below its root
// (pod logs, the flexvolume directory) except the few fixed paths Host
// restores, cgroups below the node's own cgroup, and thresholds that keep
// a small shared VM from evicting pods or collecting the imported images.
func kubeletConfiguration(n *Node, port, healthzPort int) ([]byte, error) {
	cfg := kubeletconfig.KubeletConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Address:            "127.0.0.1",
		Port:               int32(port),
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To(int32(healthzPort)),
		// Loopback only, no one else on the machine: the API server's
		// calls to the kubelet (logs, exec) need no credentials here.
		Authentication: kubeletconfig.KubeletAuthentication{
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:            kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeAlwaysAllow},
		ContainerRuntimeEndpoint: "unix://" + containerdSocket(n.containerdDir()),
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               n.cfg.CgroupRoot,
		// These machines are cgroup v1 (hybrid); kubelet ≥1.35 refuses it
		// unless told.
		FailCgroupV1:           ptr.To(false),
		FailSwapOn:             ptr.To(false),
		EnforceNodeAllocatable: []string{"pods"},
		EvictionHard: map[string]string{
			"memory.available": "1Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%",
		},
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: 30 * time.Second},
		ImageGCHighThresholdPercent:      ptr.To(int32(100)),
		ImageGCLowThresholdPercent:       ptr.To(int32(99)),
		PodLogsDir:                       n.path("pod-logs"),
		VolumePluginDir:                  n.path("volume-plugins"),
		// The pod's DNS is not used; an empty resolv.conf keeps the
		// host's search domains out of the pods.
		ResolverConfig: ptr.To(""),
		ClusterDomain:  "cluster.local",
		// A cluster DNS address (the service range's tenth, as kubeadm
		// picks it): without one the kubelet warns MissingClusterDNS for
		// every pod. Nothing answers there; no pod looks a name up.
		ClusterDNS:          []string{"10.0.0.10"},
		RegisterNode:        ptr.To(true),
		SerializeImagePulls: ptr.To(false),
		// The upstream defaults, written out (or divided by the cluster's
		// timing): how soon a pod's volume changes and status reach the
		// API server, and the heartbeats the node lifecycle controller
		// judges the node by.
		NodeStatusUpdateFrequency: metav1.Duration{Duration: n.cfg.Timing.NodeStatusUpdateFrequency()},
		NodeStatusReportFrequency: metav1.Duration{Duration: n.cfg.Timing.NodeStatusReportFrequency()},
		NodeLeaseDurationSeconds:  n.cfg.Timing.NodeLeaseDurationSeconds(),
		ProtectKernelDefaults:     false,
		// Graceful node shutdown uses systemd-logind; none here.
		ShutdownGracePeriod: metav1.Duration{},
	}
	return yaml.Marshal(cfg)
}

// kubeletArgs are the kubelet's command-line flags for node n.
func kubeletArgs(n *Node, configFile string) []string {
	args := []string{
		"--config=" + configFile,
		"--kubeconfig=" + n.cfg.Kubeconfig,
		"--root-dir=" + n.KubeletDir(),
		"--cert-dir=" + n.path("kubelet-pki"),
		"--hostname-override=" + n.cfg.Name,
		"--v=2",
	}
	if len(n.cfg.Labels) > 0 {
		labels := ""
		for _, k := range sortedKeys(n.cfg.Labels) {
			if labels != "" {
				labels += ","
			}
			labels += k + "=" + n.cfg.Labels[k]
		}
		args = append(args, "--node-labels="+labels)
	}
	return args
}

// writeFile writes data to path, creating its directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// lookPath is exec.LookPath, in /usr/sbin too (runc is there on Debian,
// which a root shell's PATH may lack).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found", name)
}
