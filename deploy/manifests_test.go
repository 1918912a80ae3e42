package deploy

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestManifestFiles: every file below kubernetes/ is a manifest of the
// deployment or of a variant the tests know, and decodes strictly with the
// client-go scheme (plus the snapshot API).
func TestManifestFiles(t *testing.T) {
	known := []string{basePattern, variantPattern, builtHerePattern}
	err := filepath.WalkDir(ManifestDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		matched := false
		for _, pattern := range known {
			ok, _ := filepath.Match(pattern, p)
			matched = matched || ok
		}
		if !matched {
			t.Errorf("%s: not a manifest the tests know (they read %s); add it to a known set or to the tests", p, strings.Join(known, ", "))
			return nil
		}
		if _, err := loadFile(p); err != nil {
			t.Error(err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range known {
		seen := map[string]string{}
		for _, m := range load(t, pattern) {
			key := m.obj.GetObjectKind().GroupVersionKind().Kind + " " + m.namespace() + "/" + m.name()
			if prev, dup := seen[key]; dup {
				t.Errorf("%s: %s again (first at %s)", m, key, prev)
			}
			seen[key] = m.String()
		}
	}
}

// TestScopeAndLabels: namespaced objects name Namespace explicitly (so that
// `kubectl apply -f` never puts them elsewhere), cluster-scoped ones no
// namespace, and every object carries the part-of label.
func TestScopeAndLabels(t *testing.T) {
	for _, m := range slices.Concat(load(t, basePattern), load(t, variantPattern), load(t, builtHerePattern), load(t, seedSweepPattern)) {
		kind := m.obj.GetObjectKind().GroupVersionKind().Kind
		switch {
		case clusterScoped[kind]:
			if m.namespace() != "" {
				t.Errorf("%s: cluster-scoped, but has namespace %q", m, m.namespace())
			}
		case namespaced[kind]:
			if m.namespace() != Namespace {
				t.Errorf("%s: namespace %q, want %q", m, m.namespace(), Namespace)
			}
		default:
			t.Errorf("%s: kind %s is neither in clusterScoped nor in namespaced of the tests", m, kind)
		}
		if acc := labelsOf(m); acc[PartOfLabel] != PartOf {
			t.Errorf("%s: label %s=%q, want %q", m, PartOfLabel, acc[PartOfLabel], PartOf)
		}
	}
	ns := one[*corev1.Namespace](t, load(t, basePattern))
	if ns.Name != Namespace || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("Namespace %s with labels %v: want %s, which admits privileged pods", ns.Name, ns.Labels, Namespace)
	}
}

func labelsOf(m manifest) map[string]string {
	type labelled interface{ GetLabels() map[string]string }
	if l, ok := m.obj.(labelled); ok {
		return l.GetLabels()
	}
	return nil
}

// TestDriverName: one driver name everywhere it appears.
func TestDriverName(t *testing.T) {
	base := load(t, basePattern)
	if d := one[*storagev1.CSIDriver](t, base); d.Name != DriverName {
		t.Errorf("CSIDriver %s, want %s", d.Name, DriverName)
	}
	if sc := one[*storagev1.StorageClass](t, base); sc.Provisioner != DriverName || sc.Name != StorageClass {
		t.Errorf("StorageClass %s provisioner %s, want %s provisioner %s", sc.Name, sc.Provisioner, StorageClass, DriverName)
	}
	if vsc := one[*snapshotv1.VolumeSnapshotClass](t, base); vsc.Driver != DriverName || vsc.Name != SnapshotClass {
		t.Errorf("VolumeSnapshotClass %s driver %s, want %s driver %s", vsc.Name, vsc.Driver, SnapshotClass, DriverName)
	}
	for name, spec := range podSpecs(t, append(base, load(t, variantPattern)...)) {
		c := container(spec, PluginContainer)
		if c == nil {
			t.Errorf("%s: no container %s", name, PluginContainer)
			continue
		}
		if v, _ := flagValue(c, "driver-name"); v != DriverName {
			t.Errorf("%s: %s --driver-name=%q, want %q", name, PluginContainer, v, DriverName)
		}
	}
}

// podSpecs returns the pod templates of the workloads, by "Kind name (file)".
func podSpecs(t *testing.T, ms []manifest) map[string]*corev1.PodSpec {
	specs := map[string]*corev1.PodSpec{}
	for _, m := range ms {
		switch o := m.obj.(type) {
		case *appsv1.Deployment:
			specs[m.String()] = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			specs[m.String()] = &o.Spec.Template.Spec
		case *appsv1.StatefulSet, *corev1.Pod, *appsv1.ReplicaSet:
			t.Errorf("%s: a workload kind the tests do not check", m)
		}
	}
	return specs
}

// TestPodSpecs: what every pod of the deployment needs to hang together.
func TestPodSpecs(t *testing.T) {
	for name, spec := range podSpecs(t, append(load(t, basePattern), load(t, variantPattern)...)) {
		t.Run(name, func(t *testing.T) { checkPodSpec(t, spec) })
	}
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func checkPodSpec(t *testing.T, spec *corev1.PodSpec) {
	plugin := container(spec, PluginContainer)
	if plugin == nil {
		t.Fatalf("no container %s", PluginContainer)
	}
	if plugin.Image != Image || plugin.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("%s: image %s (pull %s), want %s (pull IfNotPresent: run.sh loads it into the nodes)", plugin.Name, plugin.Image, plugin.ImagePullPolicy, Image)
	}
	if plugin.SecurityContext == nil || plugin.SecurityContext.Privileged == nil || !*plugin.SecurityContext.Privileged {
		t.Errorf("%s: not privileged (it mounts, or attaches loop devices)", plugin.Name)
	}
	endpoint, ok := flagValue(plugin, "endpoint")
	socket, isUnix := strings.CutPrefix(endpoint, "unix://")
	if !ok || !isUnix {
		t.Fatalf("%s: --endpoint=%q, want unix:///path", plugin.Name, endpoint)
	}
	sockVolume, sockRel := resolve(t, spec, plugin, socket)

	// Storage: the shared hostPath, root and state below it.
	st := volume(spec, "storage")
	if st == nil || st.HostPath == nil || st.HostPath.Path != StorageDir {
		t.Errorf("volume storage: %+v, want hostPath %s", st, StorageDir)
	}
	for _, f := range []string{"root", "state-dir"} {
		v, _ := flagValue(plugin, f)
		if vol, _ := resolve(t, spec, plugin, v); vol != "storage" {
			t.Errorf("%s: --%s=%s is not on the storage volume", plugin.Name, f, v)
		}
	}
	if v, _ := flagValue(plugin, "state-dir"); !strings.HasPrefix(v, StorageDir+"/state/") {
		t.Errorf("%s: --state-dir=%s, want it below %s/state/", plugin.Name, v, StorageDir)
	}

	ports := map[string]int32{}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		// Every sidecar talks to the driver's socket.
		if c.Name != PluginContainer {
			addr, ok := flagValue(c, "csi-address")
			if !ok {
				t.Errorf("%s: no --csi-address", c.Name)
			} else if vol, rel := resolve(t, spec, c, addr); vol != "" && (vol != sockVolume || rel != sockRel) {
				t.Errorf("%s: --csi-address=%s is %s/%s, but the driver listens on %s/%s", c.Name, addr, vol, rel, sockVolume, sockRel)
			}
		}
		// Every $(VAR) is defined.
		for _, a := range c.Args {
			for _, ref := range envRef.FindAllStringSubmatch(a, -1) {
				if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == ref[1] }) {
					t.Errorf("%s: arg %q uses $(%s), which the container does not define", c.Name, a, ref[1])
				}
			}
		}
		for _, m := range c.VolumeMounts {
			if volume(spec, m.Name) == nil {
				t.Errorf("%s: mounts volume %s, which the pod does not have", c.Name, m.Name)
			}
			if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional &&
				(c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged) {
				t.Errorf("%s: Bidirectional propagation needs a privileged container", c.Name)
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" {
				if _, ok := ports[p.HTTPGet.Port.StrVal]; !ok {
					t.Errorf("%s: probe on port %q, which no container declares", c.Name, p.HTTPGet.Port.StrVal)
				}
			}
		}
		if !strings.Contains(c.Image, ":v") || strings.Contains(c.Image, "latest") || strings.Contains(c.Image, "canary") {
			if c.Image != Image {
				t.Errorf("%s: image %s is not pinned to a release", c.Name, c.Image)
			}
		}
	}
	// The livenessprobe sidecar serves the driver's probes.
	if lp := container(spec, "livenessprobe"); lp == nil {
		t.Error("no livenessprobe container")
	} else if port, _ := flagValue(lp, "health-port"); port == "" || port != strconv.Itoa(int(ports["healthz"])) {
		t.Errorf("livenessprobe --health-port=%s, but port healthz is %d", port, ports["healthz"])
	}
	if plugin.LivenessProbe == nil || plugin.LivenessProbe.HTTPGet == nil || plugin.LivenessProbe.HTTPGet.Port.StrVal != "healthz" {
		t.Errorf("%s: no liveness probe on port healthz", plugin.Name)
	}
}

// resolve finds the volume and the path within it where container c sees
// file p: the mount with the longest mountPath that holds p.
func resolve(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, p string) (vol, rel string) {
	t.Helper()
	best := ""
	for _, m := range c.VolumeMounts {
		mp := strings.TrimSuffix(m.MountPath, "/")
		if (p == mp || strings.HasPrefix(p, mp+"/")) && len(mp) > len(best) {
			best, vol = mp, m.Name
			rel = strings.TrimPrefix(strings.TrimPrefix(p, mp), "/")
		}
	}
	if vol == "" {
		t.Errorf("%s: %s is on no volume of the container", c.Name, p)
	}
	return vol, rel
}

// sidecarImages: each sidecar container and its pinned image.
var sidecarImages = map[string]string{
	"csi-provisioner":       ProvisionerImage,
	"csi-attacher":          AttacherImage,
	"csi-resizer":           ResizerImage,
	"csi-snapshotter":       SnapshotterImage,
	"livenessprobe":         LivenessImage,
	"node-driver-registrar": RegistrarImage,
}

func TestController(t *testing.T) {
	d := one[*appsv1.Deployment](t, load(t, basePattern))
	if d.Name != ControllerDeployment || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment %s with %v replicas, want %s with 1", d.Name, d.Spec.Replicas, ControllerDeployment)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %s, want Recreate (two controllers must not share the state directory)", d.Spec.Strategy.Type)
	}
	checkSelector(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, ComponentController)
	spec := &d.Spec.Template.Spec
	if spec.ServiceAccountName != "csisim-controller" {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	plugin := container(spec, PluginContainer)
	if !hasArg(plugin, "--mode=controller") {
		t.Errorf("%s args %q lack --mode=controller", PluginContainer, plugin.Args)
	}
	var names []string
	for _, c := range spec.Containers {
		names = append(names, c.Name)
		if want, ok := sidecarImages[c.Name]; ok && c.Image != want {
			t.Errorf("%s: image %s, want %s", c.Name, c.Image, want)
		}
		if strings.HasPrefix(c.Name, "csi-") && !hasArg(&c, "--leader-election") {
			t.Errorf("%s: no --leader-election", c.Name)
		}
	}
	want := []string{PluginContainer, "csi-provisioner", "csi-attacher", "csi-resizer", "csi-snapshotter", "livenessprobe"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("containers %v, want %v", names, want)
	}
	if v := volume(spec, "socket-dir"); v == nil || v.EmptyDir == nil {
		t.Errorf("socket-dir %+v: want an emptyDir (the controller's socket is for its sidecars only)", v)
	}
}

func checkSelector(t *testing.T, selector, template map[string]string, component string) {
	t.Helper()
	for k, v := range selector {
		if template[k] != v {
			t.Errorf("selector %s=%s does not match the template labels %v", k, v, template)
		}
	}
	if selector[ComponentLabel] != component || selector[PartOfLabel] != PartOf {
		t.Errorf("selector %v, want %s=%s and %s=%s", selector, ComponentLabel, component, PartOfLabel, PartOf)
	}
}

func TestNodeDaemonSet(t *testing.T) {
	ds := one[*appsv1.DaemonSet](t, load(t, basePattern))
	if ds.Name != NodeDaemonSet {
		t.Errorf("DaemonSet %s, want %s", ds.Name, NodeDaemonSet)
	}
	if _, ok := ds.Spec.Template.Annotations[VariantAnnotation]; ok {
		t.Errorf("the regular DaemonSet carries %s", VariantAnnotation)
	}
	checkSelector(t, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels, ComponentNode)
	spec := &ds.Spec.Template.Spec
	if spec.ServiceAccountName != "csisim-node" {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Key == "" && tl.Operator == corev1.TolerationOpExists && tl.Effect == ""
	}) {
		t.Errorf("tolerations %+v: want one that tolerates every taint (operator Exists, no key)", spec.Tolerations)
	}

	plugin := container(spec, PluginContainer)
	if !hasArg(plugin, "--mode=node") {
		t.Errorf("%s args %q lack --mode=node", PluginContainer, plugin.Args)
	}
	// Node ID and zone from the downward API.
	for flag, fieldPath := range map[string]string{
		"node-id": "spec.nodeName",
		"zone":    "metadata.labels['" + corev1.LabelTopologyZone + "']",
	} {
		v, _ := flagValue(plugin, flag)
		m := envRef.FindStringSubmatch(v)
		if m == nil || m[0] != v {
			t.Errorf("--%s=%q, want $(VAR) from the downward API", flag, v)
			continue
		}
		i := slices.IndexFunc(plugin.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] })
		if i < 0 || plugin.Env[i].ValueFrom == nil || plugin.Env[i].ValueFrom.FieldRef == nil || plugin.Env[i].ValueFrom.FieldRef.FieldPath != fieldPath {
			t.Errorf("--%s: env %s is not the downward API field %s", flag, m[1], fieldPath)
		}
	}
	// Mounts: kubelet's directory with Bidirectional propagation, /dev.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range plugin.VolumeMounts {
		mounts[m.MountPath] = m
	}
	kd, ok := mounts[KubeletDir]
	if !ok || kd.MountPropagation == nil || *kd.MountPropagation != corev1.MountPropagationBidirectional {
		t.Errorf("%s: mount of %s %+v, want Bidirectional propagation", PluginContainer, KubeletDir, kd)
	}
	for mountPath, hostPath := range map[string]string{KubeletDir: KubeletDir, "/dev": "/dev", StorageDir: StorageDir} {
		m, ok := mounts[mountPath]
		if v := volume(spec, m.Name); !ok || v == nil || v.HostPath == nil || v.HostPath.Path != hostPath {
			t.Errorf("%s: %s is not the node's %s", PluginContainer, mountPath, hostPath)
		}
	}
	// The socket is where kubelet looks for it, and the registrar says so.
	endpoint, _ := flagValue(plugin, "endpoint")
	sockVolume, sockRel := resolve(t, spec, plugin, strings.TrimPrefix(endpoint, "unix://"))
	sv := volume(spec, sockVolume)
	pluginDir := path.Join(KubeletDir, "plugins", DriverName)
	if sv == nil || sv.HostPath == nil || sv.HostPath.Path != pluginDir {
		t.Fatalf("socket volume %+v, want hostPath %s", sv, pluginDir)
	}
	reg := container(spec, "node-driver-registrar")
	if reg == nil {
		t.Fatal("no node-driver-registrar")
	}
	if v, _ := flagValue(reg, "kubelet-registration-path"); v != path.Join(pluginDir, sockRel) {
		t.Errorf("--kubelet-registration-path=%s, want %s (the driver's socket on the host)", v, path.Join(pluginDir, sockRel))
	}
	regMount := slices.IndexFunc(reg.VolumeMounts, func(m corev1.VolumeMount) bool {
		v := volume(spec, m.Name)
		return m.MountPath == "/registration" && v != nil && v.HostPath != nil && v.HostPath.Path == path.Join(KubeletDir, "plugins_registry")
	})
	if regMount < 0 {
		t.Errorf("node-driver-registrar does not mount %s/plugins_registry at /registration", KubeletDir)
	}
	var names []string
	for _, c := range spec.Containers {
		names = append(names, c.Name)
		if want, ok := sidecarImages[c.Name]; ok && c.Image != want {
			t.Errorf("%s: image %s, want %s", c.Name, c.Image, want)
		}
	}
	if want := []string{PluginContainer, "node-driver-registrar", "livenessprobe"}; !reflect.DeepEqual(names, want) {
		t.Errorf("containers %v, want %v", names, want)
	}
}

// TestNoMountPropagationVariant: the variant is the node DaemonSet with the
// kubelet directory mounted without propagation, and nothing else changed
// but the annotation that names the variant.
func TestNoMountPropagationVariant(t *testing.T) {
	variant := load(t, variantPattern)
	if len(variant) != 1 {
		t.Fatalf("%d objects in the variant, want the node DaemonSet only", len(variant))
	}
	if filepath.Base(variant[0].file) != NodeManifest {
		t.Errorf("variant file %s, want %s (faults apply it by that name)", variant[0].file, NodeManifest)
	}
	v := one[*appsv1.DaemonSet](t, variant).DeepCopy()
	base := one[*appsv1.DaemonSet](t, load(t, basePattern))

	if got := v.Spec.Template.Annotations[VariantAnnotation]; got != "no-mount-propagation" {
		t.Errorf("variant pod template annotation %s=%q, want no-mount-propagation", VariantAnnotation, got)
	}
	delete(v.Spec.Template.Annotations, VariantAnnotation)
	if len(v.Spec.Template.Annotations) == 0 {
		v.Spec.Template.Annotations = nil
	}
	found := false
	for ci := range v.Spec.Template.Spec.Containers {
		c := &v.Spec.Template.Spec.Containers[ci]
		for mi := range c.VolumeMounts {
			m := &c.VolumeMounts[mi]
			if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
				t.Errorf("variant: %s mounts %s with Bidirectional propagation", c.Name, m.MountPath)
			}
			if c.Name == PluginContainer && m.MountPath == KubeletDir {
				if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
					t.Errorf("variant: %s propagation %s, want none", KubeletDir, *m.MountPropagation)
				}
				found = true
				bidi := corev1.MountPropagationBidirectional
				m.MountPropagation = &bidi // for the comparison below
			}
		}
	}
	if !found {
		t.Fatalf("variant: %s does not mount %s", PluginContainer, KubeletDir)
	}
	if diff := cmp.Diff(base, v); diff != "" {
		t.Errorf("the variant differs from %s in more than mount propagation (-regular +variant):\n%s", NodeManifest, diff)
	}
}

func TestServiceAccounts(t *testing.T) {
	base := load(t, basePattern)
	sas := map[string]*corev1.ServiceAccount{}
	for _, sa := range only[*corev1.ServiceAccount](base) {
		sas[sa.Namespace+"/"+sa.Name] = sa
	}
	for name, spec := range podSpecs(t, append(base, load(t, variantPattern)...)) {
		if spec.ServiceAccountName == "" {
			t.Errorf("%s: no serviceAccountName", name)
		} else if sas[Namespace+"/"+spec.ServiceAccountName] == nil {
			t.Errorf("%s: ServiceAccount %s is not in the manifests", name, spec.ServiceAccountName)
		}
	}
	// The node plugin needs no API access: no token, no bindings.
	node := sas[Namespace+"/csisim-node"]
	if node == nil || node.AutomountServiceAccountToken == nil || *node.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount csisim-node %+v: want automountServiceAccountToken false", node)
	}
	for _, b := range bindings(base) {
		for _, s := range b.subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == "csisim-node" {
				t.Errorf("%s binds csisim-node, which needs no permissions", b.name)
			}
		}
	}
}

type binding struct {
	name      string // Kind namespace/name
	namespace string // of a RoleBinding; "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
}

func bindings(ms []manifest) []binding {
	var out []binding
	for _, rb := range only[*rbacv1.RoleBinding](ms) {
		out = append(out, binding{"RoleBinding " + rb.Namespace + "/" + rb.Name, rb.Namespace, rb.RoleRef, rb.Subjects})
	}
	for _, crb := range only[*rbacv1.ClusterRoleBinding](ms) {
		out = append(out, binding{"ClusterRoleBinding " + crb.Name, "", crb.RoleRef, crb.Subjects})
	}
	return out
}

// TestRBACReferences: bindings name roles and ServiceAccounts that exist,
// and every role is bound.
func TestRBACReferences(t *testing.T) {
	base := load(t, basePattern)
	roles := map[string]bool{}
	for _, r := range only[*rbacv1.Role](base) {
		roles["Role "+r.Namespace+"/"+r.Name] = false
	}
	for _, r := range only[*rbacv1.ClusterRole](base) {
		roles["ClusterRole "+r.Name] = false
	}
	sas := map[string]bool{}
	for _, sa := range only[*corev1.ServiceAccount](base) {
		sas[sa.Namespace+"/"+sa.Name] = true
	}
	for _, b := range bindings(base) {
		if b.roleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("%s: roleRef apiGroup %q", b.name, b.roleRef.APIGroup)
		}
		var key string
		switch b.roleRef.Kind {
		case "Role":
			key = "Role " + b.namespace + "/" + b.roleRef.Name
			if b.namespace == "" {
				t.Errorf("%s: a ClusterRoleBinding cannot refer to a Role", b.name)
			}
		case "ClusterRole":
			key = "ClusterRole " + b.roleRef.Name
		default:
			t.Errorf("%s: roleRef kind %q", b.name, b.roleRef.Kind)
			continue
		}
		if _, ok := roles[key]; !ok {
			t.Errorf("%s: refers to %s, which is not in the manifests", b.name, key)
		}
		roles[key] = true
		if len(b.subjects) == 0 {
			t.Errorf("%s: no subjects", b.name)
		}
		for _, s := range b.subjects {
			if s.Kind != rbacv1.ServiceAccountKind || !sas[s.Namespace+"/"+s.Name] {
				t.Errorf("%s: subject %s %s/%s is not a ServiceAccount of the manifests", b.name, s.Kind, s.Namespace, s.Name)
			}
		}
	}
	for r, bound := range roles {
		if !bound {
			t.Errorf("%s is bound by nothing", r)
		}
	}
}

// permission is one thing a sidecar does through the API.
type permission struct {
	group, resource, verb string
	namespaced            bool // needed only in Namespace (leader election)
}

func perms(group, resource string, verbs ...string) []permission {
	var out []permission
	for _, v := range verbs {
		out = append(out, permission{group: group, resource: resource, verb: v})
	}
	return out
}

func leases() []permission {
	var out []permission
	for _, v := range []string{"get", "create", "update"} {
		out = append(out, permission{group: "coordination.k8s.io", resource: "leases", verb: v, namespaced: true})
	}
	return out
}

func concat(lists ...[]permission) []permission { return slices.Concat(lists...) }

// sidecarNeeds: what each sidecar of the controller pod reads and writes
// (from what each one watches and updates), and that each has a
// ClusterRole of its own.
var sidecarNeeds = map[string][]permission{
	"csisim-provisioner": concat(
		perms("", "persistentvolumes", "get", "list", "watch", "create", "delete"),
		perms("", "persistentvolumeclaims", "get", "list", "watch", "update"),
		perms("", "nodes", "get", "list", "watch"),
		perms("", "events", "create", "patch"),
		perms("storage.k8s.io", "storageclasses", "get", "list", "watch"),
		perms("storage.k8s.io", "csinodes", "get", "list", "watch"),
		perms("storage.k8s.io", "volumeattachments", "get", "list", "watch"),
		perms("snapshot.storage.k8s.io", "volumesnapshots", "get", "list"),
		perms("snapshot.storage.k8s.io", "volumesnapshotcontents", "get", "list"),
		leases()),
	"csisim-attacher": concat(
		perms("", "persistentvolumes", "get", "list", "watch", "patch"),
		perms("storage.k8s.io", "csinodes", "get", "list", "watch"),
		perms("storage.k8s.io", "volumeattachments", "get", "list", "watch", "patch"),
		perms("storage.k8s.io", "volumeattachments/status", "patch"),
		leases()),
	"csisim-resizer": concat(
		perms("", "persistentvolumes", "get", "list", "watch", "patch"),
		perms("", "persistentvolumeclaims", "get", "list", "watch"),
		perms("", "persistentvolumeclaims/status", "patch"),
		perms("", "pods", "get", "list", "watch"),
		perms("", "events", "create", "patch"),
		leases()),
	"csisim-snapshotter": concat(
		perms("snapshot.storage.k8s.io", "volumesnapshotclasses", "get", "list", "watch"),
		perms("snapshot.storage.k8s.io", "volumesnapshotcontents", "get", "list", "watch", "update", "patch"),
		perms("snapshot.storage.k8s.io", "volumesnapshotcontents/status", "update", "patch"),
		perms("", "events", "create", "patch"),
		leases()),
}

func TestSidecarPermissions(t *testing.T) {
	base := load(t, basePattern)
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	for _, r := range only[*rbacv1.ClusterRole](base) {
		clusterRoles[r.Name] = r
	}
	roles := map[string]*rbacv1.Role{}
	for _, r := range only[*rbacv1.Role](base) {
		roles[r.Namespace+"/"+r.Name] = r
	}
	// What the controller's ServiceAccount may do, cluster-wide and in
	// Namespace.
	var cluster, inNamespace []rbacv1.PolicyRule
	for _, b := range bindings(base) {
		if !slices.ContainsFunc(b.subjects, func(s rbacv1.Subject) bool { return s.Name == "csisim-controller" && s.Namespace == Namespace }) {
			continue
		}
		switch {
		case b.roleRef.Kind == "ClusterRole" && b.namespace == "" && clusterRoles[b.roleRef.Name] != nil:
			cluster = append(cluster, clusterRoles[b.roleRef.Name].Rules...)
		case b.roleRef.Kind == "Role" && roles[b.namespace+"/"+b.roleRef.Name] != nil:
			inNamespace = append(inNamespace, roles[b.namespace+"/"+b.roleRef.Name].Rules...)
		}
	}
	for sidecar, needs := range sidecarNeeds {
		if clusterRoles[sidecar] == nil {
			t.Errorf("no ClusterRole %s", sidecar)
		}
		for _, p := range needs {
			rules := cluster
			if p.namespaced {
				rules = append(slices.Clone(cluster), inNamespace...)
			}
			if !allows(rules, p) {
				t.Errorf("%s: the controller may not %s %s (group %q)", sidecar, p.verb, p.resource, p.group)
			}
		}
	}
}

func allows(rules []rbacv1.PolicyRule, p permission) bool {
	match := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range rules {
		if len(r.ResourceNames) == 0 && match(r.APIGroups, p.group) && match(r.Resources, p.resource) && match(r.Verbs, p.verb) {
			return true
		}
	}
	return false
}

// TestMatchesScenarioLibrary: the CSIDriver and StorageClass of the
// scenario library are the deployment's, so a scenario that applies them
// on a deployed cluster replaces ours without changing an immutable field.
func TestMatchesScenarioLibrary(t *testing.T) {
	lib, err := loadLibraryDriver(t)
	if err != nil {
		t.Fatal(err)
	}
	base := load(t, basePattern)
	ourDriver := one[*storagev1.CSIDriver](t, base)
	ourClass := one[*storagev1.StorageClass](t, base)
	seen := 0
	for _, d := range only[*storagev1.CSIDriver](lib) {
		seen++
		if d.Name != ourDriver.Name {
			t.Errorf("library CSIDriver %s, ours %s", d.Name, ourDriver.Name)
		}
		if diff := cmp.Diff(ourDriver.Spec, d.Spec); diff != "" {
			t.Errorf("CSIDriver spec differs from the library's (-ours +library):\n%s", diff)
		}
	}
	for _, sc := range only[*storagev1.StorageClass](lib) {
		if sc.Name != ourClass.Name {
			continue // another class: no conflict
		}
		seen++
		type immutable struct {
			Provisioner          string
			Parameters           map[string]string
			ReclaimPolicy        *corev1.PersistentVolumeReclaimPolicy
			VolumeBindingMode    *storagev1.VolumeBindingMode
			MountOptions         []string
			AllowedTopologies    []corev1.TopologySelectorTerm
			AllowVolumeExpansion *bool
		}
		pick := func(c *storagev1.StorageClass) immutable {
			return immutable{c.Provisioner, c.Parameters, c.ReclaimPolicy, c.VolumeBindingMode, c.MountOptions, c.AllowedTopologies, c.AllowVolumeExpansion}
		}
		if diff := cmp.Diff(pick(ourClass), pick(sc)); diff != "" {
			t.Errorf("StorageClass %s differs from the library's (-ours +library):\n%s", sc.Name, diff)
		}
	}
	// The library's class is ours: one name for the default class
	// everywhere (profile.StorageClassName).
	if seen != 2 {
		t.Errorf("found %d of the deployment's CSIDriver and StorageClass in the library manifest, want both", seen)
	}
	if ourClass.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("StorageClass %s is not marked default", ourClass.Name)
	}
	if ourClass.ReclaimPolicy == nil || *ourClass.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		ourClass.VolumeBindingMode == nil || *ourClass.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("StorageClass %s: want reclaimPolicy Delete, volumeBindingMode Immediate", ourClass.Name)
	}
	if ourDriver.Spec.AttachRequired == nil || !*ourDriver.Spec.AttachRequired || ourDriver.Spec.PodInfoOnMount == nil || !*ourDriver.Spec.PodInfoOnMount {
		t.Errorf("CSIDriver: want attachRequired true, podInfoOnMount true")
	}
	if want := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}; !slices.Equal(ourDriver.Spec.VolumeLifecycleModes, want) {
		t.Errorf("CSIDriver: volumeLifecycleModes %v, want %v", ourDriver.Spec.VolumeLifecycleModes, want)
	}
}

// TestDockerfile: the image builds the csisim binary and runs `csisim
// driver`, with the tools the driver executes.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	var froms []string
	for _, m := range regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1) {
		froms = append(froms, m[1])
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:1.26") || froms[1] != "debian:bookworm-slim" {
		t.Errorf("stages %v, want a golang:1.26 builder and debian:bookworm-slim", froms)
	}
	for _, want := range []string{
		"go build", "./cmd/csisim",
		`ENTRYPOINT ["/usr/local/bin/csisim", "driver"]`,
		"util-linux", "mount", "e2fsprogs", "xfsprogs",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "cmd", "csisim")); err != nil {
		t.Errorf("the Dockerfile builds ./cmd/csisim: %v", err)
	}
	ignore, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		if line == "cmd" || line == "drivers" || line == "go.mod" {
			t.Errorf("Dockerfile.dockerignore drops %s, which the build needs", line)
		}
	}
}
