package faults

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/csisim/csisim/deploy"
)

// OutOfServiceTaint is the taint OutOfService puts on a node: the one
// Kubernetes' non-graceful node shutdown handling acts on.
var OutOfServiceTaint = corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

// Defaults of KindConfig and of the timeout parameter.
const (
	DefaultDocker  = "docker"
	DefaultKubectl = "kubectl"
	// DefaultTimeout bounds waiting for a node to return or a rollout.
	DefaultTimeout = 5 * time.Minute
)

// KindConfig describes the kind cluster faults are injected into, with the
// driver deployed from deploy/kubernetes.
type KindConfig struct {
	// Cluster is the kind cluster name (kind create cluster --name). Its
	// node containers, and so its Kubernetes nodes, are named
	// <Cluster>-control-plane and <Cluster>-worker, <Cluster>-worker2, ...;
	// Plan refuses docker actions on any other container. Required.
	Cluster string
	// Kubeconfig is passed to kubectl as --kubeconfig; empty: kubectl's
	// default ($KUBECONFIG).
	Kubeconfig string
	// DeployDir is the directory of the driver's manifests, the
	// repository's deploy/kubernetes (deploy.ManifestDir). Required for
	// missing-mount-propagation and restore-mount-propagation.
	DeployDir string
	// Docker and Kubectl are the commands to run; DefaultDocker and
	// DefaultKubectl if empty.
	Docker  string
	Kubectl string
}

// CommandRunner runs a command and returns its combined output.
type CommandRunner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// ExecRunner runs commands with os/exec.
type ExecRunner struct{}

// Run runs argv[0] with the arguments argv[1:].
func (ExecRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// Kind is the Executor for a kind cluster.
type Kind struct {
	Config KindConfig
	// Runner runs Command actions; ExecRunner if nil.
	Runner CommandRunner
	// Client performs the client-go actions.
	Client kubernetes.Interface
	// Log receives one line per action before it runs; nil: nothing.
	Log io.Writer
	// PollInterval is how often waits look; 2s if zero.
	PollInterval time.Duration
	// Now stamps NoExecute taints; time.Now if nil.
	Now func() time.Time
}

var _ Executor = (*Kind)(nil)

// NewKind returns the executor for the kind cluster cfg, acting on the API
// through client.
func NewKind(cfg KindConfig, client kubernetes.Interface) *Kind {
	return &Kind{Config: cfg, Client: client}
}

// params of each fault: the required ones and the optional ones.
var kindParams = map[string]struct{ required, optional []string }{
	NodeLoss:                {[]string{ParamNode}, []string{ParamMethod}},
	NodeReturn:              {[]string{ParamNode}, []string{ParamTimeout}},
	OutOfService:            {[]string{ParamNode}, nil},
	ClearOutOfService:       {[]string{ParamNode}, nil},
	StaleVolumeAttachment:   {nil, []string{ParamMode, ParamNode, ParamPV, ParamVolumeHandle, ParamName, ParamPod, ParamNamespace}},
	MissingMountPropagation: {nil, []string{ParamTimeout}},
	RestoreMountPropagation: {nil, []string{ParamTimeout}},
	DriverCrash:             {nil, []string{ParamComponent, ParamNode, ParamMethod}},
	GRPCError:               {nil, nil}, // any: it is refused anyway
}

// Plan maps f to actions on the kind cluster; see the package comment for
// the table. It only reads k.Config.
func (k *Kind) Plan(f Fault) ([]Action, error) {
	spec, ok := kindParams[f.Name]
	if !ok {
		return nil, fmt.Errorf("unknown fault %q (known: %s)", f.Name, strings.Join(Names(), ", "))
	}
	if f.Name == GRPCError {
		return nil, &UnsupportedError{Fault: f.Name, Backend: "kind", Reason: "gRPC errors are injected by drivers/faultproxy, which sits between the sidecars and the driver; " +
			"the kind deployment (deploy/kubernetes) connects the sidecars and kubelet straight to the driver's socket, so there is nothing to inject them. " +
			"Run the scenario on the simulator, or deploy the driver behind the proxy"}
	}
	if k.Config.Cluster == "" {
		return nil, errors.New("KindConfig.Cluster is required")
	}
	for _, p := range spec.required {
		if f.Params[p] == "" {
			return nil, fmt.Errorf("fault %s: parameter %q is required", f.Name, p)
		}
	}
	allowed := append(slices.Clone(spec.required), spec.optional...)
	for _, p := range slices.Sorted(maps.Keys(f.Params)) {
		if !slices.Contains(allowed, p) {
			return nil, fmt.Errorf("fault %s: unknown parameter %q (allowed: %s)", f.Name, p, strings.Join(allowed, ", "))
		}
	}
	p := f.Params
	switch f.Name {
	case NodeLoss:
		if err := k.checkWorker(f.Name, p[ParamNode]); err != nil {
			return nil, err
		}
		verb, err := oneOf(f.Name, ParamMethod, p[ParamMethod], "stop", "kill")
		if err != nil {
			return nil, err
		}
		return []Action{k.docker(verb, p[ParamNode])}, nil

	case NodeReturn:
		if err := k.checkWorker(f.Name, p[ParamNode]); err != nil {
			return nil, err
		}
		timeout, err := timeoutParam(f)
		if err != nil {
			return nil, err
		}
		return []Action{
			k.docker("start", p[ParamNode]),
			WaitNodeReady{Node: p[ParamNode], Status: corev1.ConditionTrue, Timeout: timeout},
		}, nil

	case OutOfService, ClearOutOfService:
		if err := k.checkNode(f.Name, p[ParamNode]); err != nil {
			return nil, err
		}
		if f.Name == OutOfService {
			return []Action{TaintNode{Node: p[ParamNode], Taint: OutOfServiceTaint}}, nil
		}
		return []Action{UntaintNode{Node: p[ParamNode], Key: OutOfServiceTaint.Key, Effect: OutOfServiceTaint.Effect}}, nil

	case StaleVolumeAttachment:
		return k.planStaleVolumeAttachment(f)

	case MissingMountPropagation, RestoreMountPropagation:
		if k.Config.DeployDir == "" {
			return nil, fmt.Errorf("fault %s: KindConfig.DeployDir (the repository's deploy/kubernetes) is required", f.Name)
		}
		timeout, err := timeoutParam(f)
		if err != nil {
			return nil, err
		}
		manifest := filepath.Join(k.Config.DeployDir, deploy.NodeManifest)
		if f.Name == MissingMountPropagation {
			manifest = filepath.Join(k.Config.DeployDir, deploy.NoMountPropagationVariant, deploy.NodeManifest)
		}
		// Changing the pod template rolls the DaemonSet; the fault is in
		// effect once every node runs the new pods.
		return []Action{
			k.kubectl("apply", "-f", manifest),
			k.kubectl("-n", deploy.Namespace, "rollout", "status", "daemonset/"+deploy.NodeDaemonSet, "--timeout="+timeout.String()),
		}, nil

	case DriverCrash:
		return k.planDriverCrash(f)
	}
	return nil, fmt.Errorf("fault %s: no plan on kind", f.Name) // unreachable: kindParams and the switch agree
}

func (k *Kind) planDriverCrash(f Fault) ([]Action, error) {
	p := f.Params
	component, err := oneOf(f.Name, ParamComponent, p[ParamComponent], deploy.ComponentNode, deploy.ComponentController)
	if err != nil {
		return nil, err
	}
	method, err := oneOf(f.Name, ParamMethod, p[ParamMethod], "delete-pod", "kill-container")
	if err != nil {
		return nil, err
	}
	selector := labels.Set{deploy.PartOfLabel: deploy.PartOf, deploy.ComponentLabel: component}.String()
	if component == deploy.ComponentController {
		if p[ParamNode] != "" {
			return nil, fmt.Errorf("fault %s: component=controller takes no %q (the controller runs wherever it is scheduled)", f.Name, ParamNode)
		}
		if method != "delete-pod" {
			return nil, fmt.Errorf("fault %s: component=controller supports method=delete-pod only", f.Name)
		}
		return []Action{DeletePods{Namespace: deploy.Namespace, LabelSelector: selector, GracePeriodSeconds: ptr[int64](0)}}, nil
	}
	node := p[ParamNode]
	if node == "" {
		return nil, fmt.Errorf("fault %s: parameter %q is required (the node whose plugin crashes)", f.Name, ParamNode)
	}
	if err := k.checkNode(f.Name, node); err != nil {
		return nil, err
	}
	if method == "delete-pod" {
		// Force deletion: no graceful stop; the DaemonSet controller
		// starts a new pod, whose driver finds its state in the state
		// directory.
		return []Action{DeletePods{Namespace: deploy.Namespace, LabelSelector: selector, Node: node, GracePeriodSeconds: ptr[int64](0)}}, nil
	}
	// SIGKILL the driver container in place (crictl stop with timeout 0),
	// as if the process had crashed; kubelet restarts it in the same pod.
	// (kill 1 through kubectl exec would not do: PID 1 of a container
	// ignores SIGKILL sent from inside, and SIGTERM is a clean stop.)
	script := fmt.Sprintf("crictl stop --timeout 0 $(crictl ps --quiet --name '^%s$' --label io.kubernetes.pod.namespace=%s)", deploy.PluginContainer, deploy.Namespace)
	return []Action{k.docker("exec", node, "sh", "-c", script)}, nil
}

func (k *Kind) planStaleVolumeAttachment(f Fault) ([]Action, error) {
	p := f.Params
	mode, err := oneOf(f.Name, ParamMode, p[ParamMode], "create", "orphan")
	if err != nil {
		return nil, err
	}
	allowed := map[string][]string{
		"create": {ParamMode, ParamNode, ParamPV, ParamVolumeHandle, ParamName},
		"orphan": {ParamMode, ParamNode, ParamPod, ParamNamespace},
	}[mode]
	for _, key := range slices.Sorted(maps.Keys(p)) {
		if !slices.Contains(allowed, key) {
			return nil, fmt.Errorf("fault %s: parameter %q does not apply to mode=%s (allowed: %s)", f.Name, key, mode, strings.Join(allowed, ", "))
		}
	}
	node := p[ParamNode]
	if node == "" {
		return nil, fmt.Errorf("fault %s: parameter %q is required", f.Name, ParamNode)
	}
	if mode == "orphan" {
		// The node goes away while a pod still uses the volume there, and
		// the pod object is force-deleted: nothing unmounts or detaches,
		// so the VolumeAttachment stays until the attach/detach controller
		// gives up waiting (or the node is marked out of service).
		if err := k.checkWorker(f.Name, node); err != nil {
			return nil, err
		}
		if p[ParamPod] == "" {
			return nil, fmt.Errorf("fault %s: mode=orphan needs parameter %q (the pod using the volume on the node)", f.Name, ParamPod)
		}
		ns := p[ParamNamespace]
		if ns == "" {
			ns = "default"
		}
		return []Action{
			k.docker("stop", node),
			DeletePod{Namespace: ns, Name: p[ParamPod], GracePeriodSeconds: ptr[int64](0)},
		}, nil
	}
	// mode=create: the node may well not exist (any more): that is the
	// point. It only has to be a valid node name.
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return nil, fmt.Errorf("fault %s: node %q is not a valid node name: %s", f.Name, node, strings.Join(errs, "; "))
	}
	pv := p[ParamPV]
	if pv == "" {
		return nil, fmt.Errorf("fault %s: mode=create needs parameter %q (the PersistentVolume the attachment is for)", f.Name, ParamPV)
	}
	name := p[ParamName]
	switch {
	case name != "":
	case p[ParamVolumeHandle] != "":
		// The name kubelet and the attach/detach controller give the
		// attachment of this volume to this node, so the stale object
		// stands exactly where a real one would.
		name = fmt.Sprintf("csi-%x", sha256.Sum256([]byte(p[ParamVolumeHandle]+deploy.DriverName+node)))
	default:
		name = fmt.Sprintf("csisim-stale-%x", sha256.Sum256([]byte(pv+"\x00"+node)))[:len("csisim-stale-")+16]
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("fault %s: %q is not a valid object name: %s", f.Name, name, strings.Join(errs, "; "))
	}
	return []Action{CreateVolumeAttachment{Name: name, Attacher: deploy.DriverName, Node: node, PersistentVolume: pv}}, nil
}

// nodeName matches the node containers of cluster c: c-control-plane,
// c-control-plane2, ..., c-worker, c-worker2, ...
func (k *Kind) nodeName() *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(k.Config.Cluster) + `-(control-plane|worker)([1-9][0-9]*)?$`)
}

// checkNode accepts the nodes of this kind cluster only: a docker action
// on any other container could hit something that is not ours.
func (k *Kind) checkNode(fault, node string) error {
	if !k.nodeName().MatchString(node) {
		return fmt.Errorf("fault %s: %q is not a node of kind cluster %q (its nodes are %s-control-plane, %s-worker, %s-worker2, ...)",
			fault, node, k.Config.Cluster, k.Config.Cluster, k.Config.Cluster, k.Config.Cluster)
	}
	return nil
}

// checkWorker is checkNode for faults that stop a node: the control plane
// takes the API server with it, and then nothing can observe the fault.
func (k *Kind) checkWorker(fault, node string) error {
	if err := k.checkNode(fault, node); err != nil {
		return err
	}
	if m := k.nodeName().FindStringSubmatch(node); m[1] == "control-plane" {
		return fmt.Errorf("fault %s: %s is a control-plane node; stopping it stops the API server, so pick a worker", fault, node)
	}
	return nil
}

func (k *Kind) docker(args ...string) Command {
	bin := k.Config.Docker
	if bin == "" {
		bin = DefaultDocker
	}
	return Command{Argv: append([]string{bin}, args...)}
}

func (k *Kind) kubectl(args ...string) Command {
	argv := []string{k.Config.Kubectl}
	if argv[0] == "" {
		argv[0] = DefaultKubectl
	}
	if k.Config.Kubeconfig != "" {
		argv = append(argv, "--kubeconfig", k.Config.Kubeconfig)
	}
	return Command{Argv: append(argv, args...)}
}

// oneOf returns value if it is one of choices, choices[0] if it is empty.
func oneOf(fault, param, value string, choices ...string) (string, error) {
	if value == "" {
		return choices[0], nil
	}
	if !slices.Contains(choices, value) {
		return "", fmt.Errorf("fault %s: %s=%q is not one of %s", fault, param, value, strings.Join(choices, ", "))
	}
	return value, nil
}

func timeoutParam(f Fault) (time.Duration, error) {
	s := f.Params[ParamTimeout]
	if s == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("fault %s: timeout=%q is not a positive Go duration such as 90s or 5m", f.Name, s)
	}
	return d, nil
}

func ptr[T any](v T) *T { return &v }

// Execute performs actions in order; see Executor.
func (k *Kind) Execute(ctx context.Context, actions []Action) error {
	for i, a := range actions {
		if k.Log != nil {
			fmt.Fprintf(k.Log, "fault: %s\n", a)
		}
		if err := k.execute(ctx, a); err != nil {
			return fmt.Errorf("action %d of %d (%s): %w", i+1, len(actions), a, err)
		}
	}
	return nil
}

func (k *Kind) execute(ctx context.Context, a Action) error {
	if c, ok := a.(Command); ok {
		runner := k.Runner
		if runner == nil {
			runner = ExecRunner{}
		}
		out, err := runner.Run(ctx, c.Argv)
		if err != nil {
			if s := strings.TrimSpace(string(out)); s != "" {
				return fmt.Errorf("%w: %s", err, s)
			}
			return err
		}
		return nil
	}
	if k.Client == nil {
		return errors.New("no Kubernetes client (Kind.Client) for a client-go action")
	}
	switch a := a.(type) {
	case TaintNode:
		return k.updateNode(ctx, a.Node, func(n *corev1.Node) bool {
			t := a.Taint
			if t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil {
				now := k.now()
				t.TimeAdded = &metav1.Time{Time: now}
			}
			for i, old := range n.Spec.Taints {
				if old.Key == t.Key && old.Effect == t.Effect {
					if old.Value == t.Value {
						return false
					}
					n.Spec.Taints[i] = t
					return true
				}
			}
			n.Spec.Taints = append(n.Spec.Taints, t)
			return true
		})
	case UntaintNode:
		return k.updateNode(ctx, a.Node, func(n *corev1.Node) bool {
			kept := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == a.Key && t.Effect == a.Effect })
			if len(kept) == len(n.Spec.Taints) {
				return false
			}
			n.Spec.Taints = kept
			return true
		})
	case DeletePods:
		opts := metav1.ListOptions{LabelSelector: a.LabelSelector}
		if a.Node != "" {
			opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.Node).String()
		}
		pods, err := k.Client.CoreV1().Pods(a.Namespace).List(ctx, opts)
		if err != nil {
			return err
		}
		deleted := 0
		for _, pod := range pods.Items {
			if a.Node != "" && pod.Spec.NodeName != a.Node {
				continue // field selectors are the server's business; be sure
			}
			err := k.Client.CoreV1().Pods(a.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: a.GracePeriodSeconds})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			deleted++
		}
		if deleted == 0 {
			return fmt.Errorf("no pod matches %s", a)
		}
		return nil
	case DeletePod:
		return k.Client.CoreV1().Pods(a.Namespace).Delete(ctx, a.Name, metav1.DeleteOptions{GracePeriodSeconds: a.GracePeriodSeconds})
	case CreateVolumeAttachment:
		pv := a.PersistentVolume
		va := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: a.Name},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: a.Attacher,
				NodeName: a.Node,
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
			},
		}
		_, err := k.Client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
		return err
	case WaitNodeReady:
		interval := k.PollInterval
		if interval == 0 {
			interval = 2 * time.Second
		}
		last := "not seen yet"
		err := wait.PollUntilContextTimeout(ctx, interval, a.Timeout, true, func(ctx context.Context) (bool, error) {
			n, err := k.Client.CoreV1().Nodes().Get(ctx, a.Node, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = "no Ready condition"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason)
					return c.Status == a.Status, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("%w; last seen: %s", err, last)
		}
		return nil
	}
	return fmt.Errorf("unknown action type %T", a)
}

// updateNode applies change to the node and writes it back if change
// reports a difference, retrying on conflicts.
func (k *Kind) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		_, err = k.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func (k *Kind) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}
