package unmodelled

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// object reads a manifest as a scenario or kubectl reads it.
func object(t *testing.T, manifest string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return obj
}

// pod is a Pod whose spec is base's with extra (YAML, indented under
// spec:) added.
func pod(extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n" + extra
}

const container = `  containers:
    - name: app
      image: busybox
`

// refusedCases: each refused field, and the path it is refused at.
var refusedCases = []struct {
	name, manifest, path string
	needs                Backend
}{
	{"preStop hook", pod(container + "      lifecycle: {preStop: {exec: {command: [sleep, '5']}}}\n"), "spec.containers[0].lifecycle", RealNodes},
	{"init container postStart", pod(container + "  initContainers:\n    - name: init\n      lifecycle: {postStart: {exec: {command: [true]}}}\n"),
		"spec.initContainers[0].lifecycle", RealNodes},
	{"Bidirectional propagation", pod(container + "      volumeMounts: [{name: v, mountPath: /v, mountPropagation: Bidirectional}]\n"),
		"spec.containers[0].volumeMounts[0].mountPropagation", RealNodes},
	{"user namespace", pod(container + "  hostUsers: false\n"), "spec.hostUsers", RealNodes},
	{"ConfigMap volume", pod(container + "  volumes: [{name: c, configMap: {name: conf}}]\n"), "spec.volumes[0].configMap", RealNodes},
	{"Secret volume", pod(container + "  volumes: [{name: s, secret: {secretName: s}}]\n"), "spec.volumes[0].secret", RealNodes},
	{"projected Secret", pod(container + "  volumes: [{name: p, projected: {sources: [{serviceAccountToken: {path: t}}, {secret: {name: s}}]}}]\n"),
		"spec.volumes[0].projected.sources[1].secret", RealNodes},
	{"projected trust bundle", pod(container + "  volumes: [{name: p, projected: {sources: [{clusterTrustBundle: {name: b, path: b}}]}}]\n"),
		"spec.volumes[0].projected.sources[0].clusterTrustBundle", RealNodes},
	{"hostPath volume", pod(container + "  volumes: [{name: logs, hostPath: {path: /var/log}}]\n"), "spec.volumes[0].hostPath", RealNodes},
	{"NFS volume", pod(container + "  volumes: [{name: share, nfs: {server: nfs, path: /x}}]\n"), "spec.volumes[0].nfs", RealNodes},
	{"iSCSI volume", pod(container + "  volumes: [{name: i, iscsi: {targetPortal: p, iqn: q, lun: 0}}]\n"), "spec.volumes[0].iscsi", RealNodes},
	{"env from a Secret key", pod(container + "      env: [{name: P, valueFrom: {secretKeyRef: {name: db, key: password}}}]\n"),
		"spec.containers[0].env[0].valueFrom.secretKeyRef", RealNodes},
	{"envFrom a ConfigMap", pod(container + "      envFrom: [{configMapRef: {name: conf}}]\n"), "spec.containers[0].envFrom[0].configMapRef", RealNodes},
	{"active deadline", pod(container + "  activeDeadlineSeconds: 60\n"), "spec.activeDeadlineSeconds", RealNodes},
	{"readiness gate", pod(container + "  readinessGates: [{conditionType: example.com/ready}]\n"), "spec.readinessGates", RealNodes},
	{"host network", pod(container + "  hostNetwork: true\n"), "spec.hostNetwork", RealNodes},
	{"Windows pod", pod(container + "  os: {name: windows}\n"), "spec.os.name", RealNodes},
	{"scheduling gate", pod(container + "  schedulingGates: [{name: example.com/wait}]\n"), "spec.schedulingGates", RealControlPlane},
	{"host port", pod(container + "      ports: [{containerPort: 80, hostPort: 8080}]\n"), "spec.containers[0].ports[0].hostPort", RealControlPlane},
	{"resource claim", pod(container + "  resourceClaims: [{name: gpu, resourceClaimName: gpu}]\n"), "spec.resourceClaims", RealControlPlane},
	{"container resource claim", pod(container + "      resources: {claims: [{name: gpu}]}\n"), "spec.containers[0].resources.claims", RealControlPlane},
	{"pod-level resources", pod(container + "  resources: {requests: {cpu: '1'}}\n"), "spec.resources", RealControlPlane},
	{"runtime class", pod(container + "  runtimeClassName: gvisor\n"), "spec.runtimeClassName", RealControlPlane},
	{"a StatefulSet template's hook", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      containers: [{name: db, image: postgres, lifecycle: {preStop: {exec: {command: [pg_ctl, stop]}}}}]
`, "spec.template.spec.containers[0].lifecycle", RealNodes},
	{"a Deployment's minReadySeconds", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {minReadySeconds: 10}\n",
		"spec.minReadySeconds", RealControlPlane},
	{"a paused Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {paused: true}\n", "spec.paused", RealControlPlane},
	{"a ReplicaSet template's host port", `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec: {template: {spec: {containers: [{name: a, ports: [{containerPort: 1, hostPort: 1}]}]}}}
`, "spec.template.spec.containers[0].ports[0].hostPort", RealControlPlane},
	{"Recycle", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {persistentVolumeReclaimPolicy: Recycle}\n",
		"spec.persistentVolumeReclaimPolicy", RealNodes},
	{"DaemonSet", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\n", "kind", RealControlPlane},
	{"Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "kind", RealNodes},
	{"ResourceQuota", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n", "kind", RealControlPlane},
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range refusedCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(object(t, tc.manifest), nil)
			if len(got) != 1 {
				t.Fatalf("refused %d fields, want 1 (%s): %+v", len(got), tc.path, got)
			}
			if got[0].Path != tc.path {
				t.Errorf("refused %s, want %s", got[0].Path, tc.path)
			}
			subject := tc.path
			if tc.path == "kind" {
				subject = "kind " + object(t, tc.manifest)["kind"].(string)
			}
			wantStart, wantEnd := "csisim does not model "+subject+" (it would change ", "); use "+string(tc.needs)
			if msg := got[0].Message; !strings.HasPrefix(msg, wantStart) || !strings.HasSuffix(msg, wantEnd) {
				t.Errorf("message %q, want %q...%q", msg, wantStart, wantEnd)
			}
		})
	}
}

// TestEveryRowHasACase: each row of the table is refused by some case
// above, so no row is dead.
func TestEveryRowHasACase(t *testing.T) {
	var messages []string
	for _, tc := range refusedCases {
		for _, r := range Check(object(t, tc.manifest), nil) {
			messages = append(messages, r.Message)
		}
	}
	for _, r := range Fields {
		if r.update != nil {
			continue // TestCheckUpdates
		}
		if !containsAny(messages, "(it would change "+r.Changes+")") {
			t.Errorf("no case refuses %s", r.Path)
		}
	}
	for _, k := range Kinds {
		if k.Kind == "DaemonSet" || k.Kind == "Job" || k.Kind == "ResourceQuota" {
			continue
		}
		obj := map[string]any{"apiVersion": strings.TrimPrefix(k.Group+"/"+k.Version, "/"), "kind": k.Kind}
		if got := Check(obj, nil); len(got) != 1 || got[0].Path != "kind" {
			t.Errorf("kind %s: %+v, want the kind refused", k.Kind, got)
		}
	}
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestCheckAccepts: what the simulated cluster models, or what changes
// nothing the run shows, is accepted.
func TestCheckAccepts(t *testing.T) {
	for name, manifest := range map[string]string{
		"node selector and node affinity, required and preferred": pod(container + `  nodeSelector: {topology.kubernetes.io/zone: a}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Exists}]}]}
      preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: k, operator: Exists}]}}]
`),
		"pod affinity and anti-affinity": pod(container + `  affinity:
    podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, labelSelector: {matchLabels: {a: b}}}]}
    podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, podAffinityTerm: {topologyKey: zone}}]}
`),
		"taints and tolerations, spread, priority": pod(container + `  tolerations: [{key: dedicated, operator: Equal, value: db, effect: NoSchedule}]
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]
  priorityClassName: high
  schedulerName: other-scheduler
`),
		"subPath, subPathExpr from a Secret key, devices, read-only": pod(`  containers:
    - name: app
      image: busybox
      command: [sleep, infinity]
      env: [{name: P, valueFrom: {secretKeyRef: {name: s, key: k}}}, {name: N, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
      envFrom: [{configMapRef: {name: conf}}]
      volumeMounts:
        - {name: data, mountPath: /data, subPathExpr: $(N), readOnly: true, mountPropagation: None}
      volumeDevices: [{name: raw, devicePath: /dev/xvda}]
      resources: {requests: {cpu: 100m, memory: 1Gi}}
      readinessProbe: {exec: {command: [true]}, initialDelaySeconds: 5}
      livenessProbe: {httpGet: {port: 80}}
  volumes:
    - {name: data, persistentVolumeClaim: {claimName: data}}
    - {name: raw, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}}
    - {name: inline, csi: {driver: hostpath.csisim.io}}
    - {name: scratch, emptyDir: {sizeLimit: 1Gi}}
    - {name: info, downwardAPI: {items: [{path: n, fieldRef: {fieldPath: metadata.name}}]}}
    - {name: maybe, configMap: {name: conf, optional: true}}
    - {name: token, projected: {sources: [{serviceAccountToken: {path: t}}, {secret: {name: s, optional: true}}]}}
  securityContext: {fsGroup: 1000, runAsUser: 1000, fsGroupChangePolicy: OnRootMismatch}
  hostUsers: true
  hostNetwork: false
  os: {name: linux}
  terminationGracePeriodSeconds: 5
  restartPolicy: Always
`),
		"a sidecar init container": pod(container + "  initContainers: [{name: s, image: x, restartPolicy: Always}]\n"),
		"a StatefulSet as the library writes it": `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  podManagementPolicy: Parallel
  minReadySeconds: 0
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}}
  template: {spec: {containers: [{name: web, image: nginx}]}}
  volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce]}}]
`,
		"a Deployment with Recreate":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {strategy: {type: Recreate}, progressDeadlineSeconds: 60, paused: false, revisionHistoryLimit: 1}\n",
		"a static NFS volume, Retain":   "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {nfs: {server: s, path: /}, persistentVolumeReclaimPolicy: Retain}\n",
		"a host path volume, Delete":    "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {hostPath: {path: /tmp/x}, persistentVolumeReclaimPolicy: Delete}\n",
		"a CSIDriver with seLinuxMount": "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\nspec: {seLinuxMount: true, attachRequired: false}\n",
		// The simulated kubelet honours them (sim/kubelet/selinux.go).
		"a pod SELinux label":          pod(container + "  securityContext: {seLinuxOptions: {level: 's0:c1,c2'}}\n"),
		"an SELinux change policy":     pod(container + "  securityContext: {seLinuxChangePolicy: Recursive}\n"),
		"a container SELinux label":    pod(container + "      securityContext: {seLinuxOptions: {type: spc_t}}\n"),
		"a claim from a populator":     "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {dataSourceRef: {apiGroup: x.io, kind: Backup, name: b}}\n",
		"a value still to be expanded": pod(container + "      volumeMounts: [{name: v, mountPath: /v, mountPropagation: '${mode}'}]\n"),
		"a pod volume of another kind": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {hostPath: /x}\n",
		// Of plugins v1.37 removed: no plugin (sim/migration RemovedInline).
		"inline volumes of removed plugins": pod(container + `  volumes:
    - {name: r, rbd: {monitors: [m], image: i}}
    - {name: c, cephfs: {monitors: [m]}}
    - {name: g, glusterfs: {endpoints: e, path: p}}
`),
		// Translated to their CSI driver's volumes (sim/migration Inline).
		"inline volumes of migrated plugins": pod(container + `  volumes:
    - {name: ebs, awsElasticBlockStore: {volumeID: 'aws://us-east-1a/vol-1', fsType: ext4}}
    - {name: pd, gcePersistentDisk: {pdName: disk-1}}
    - {name: ad, azureDisk: {diskName: d, diskURI: /subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d}}
    - {name: af, azureFile: {secretName: s, shareName: share}}
    - {name: os, cinder: {volumeID: v}}
    - {name: vs, vsphereVolume: {volumePath: '[ds] v.vmdk'}}
    - {name: px, portworxVolume: {volumeID: v}}
`),
	} {
		t.Run(name, func(t *testing.T) {
			if got := Check(object(t, manifest), nil); len(got) > 0 {
				t.Errorf("refused: %+v", got)
			}
		})
	}
}

// TestCheckUpdates: an update is refused for the refused fields it
// changes, and a StatefulSet's template change under RollingUpdate.
func TestCheckUpdates(t *testing.T) {
	hooked := pod(container + "      lifecycle: {preStop: {exec: {command: [sleep, '5']}}}\n")
	relabelled := object(t, hooked)
	relabelled["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"}
	sts := func(image, strategy string) string {
		return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  updateStrategy: {type: " + strategy +
			"}\n  template: {spec: {containers: [{name: web, image: " + image + "}]}}\n"
	}
	for _, tc := range []struct {
		name     string
		obj, old map[string]any
		want     string // the path refused, "" for none
	}{
		{"a hook already there", relabelled, object(t, hooked), ""},
		{"a hook added", object(t, hooked), object(t, pod(container)), "spec.containers[0].lifecycle"},
		{"a template changed under RollingUpdate", object(t, sts("nginx:2", "RollingUpdate")), object(t, sts("nginx:1", "RollingUpdate")), "spec.template"},
		{"a template changed under OnDelete", object(t, sts("nginx:2", "OnDelete")), object(t, sts("nginx:1", "OnDelete")), ""},
		{"a StatefulSet scaled", object(t, sts("nginx:1", "RollingUpdate")), object(t, sts("nginx:1", "RollingUpdate")), ""},
		{"a StatefulSet made", object(t, sts("nginx:2", "RollingUpdate")), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.obj, tc.old)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("refused %+v", got)
			case tc.want != "" && (len(got) != 1 || got[0].Path != tc.want):
				t.Errorf("refused %+v, want %s", got, tc.want)
			}
		})
	}
}

// TestCheckObject: the API server's typed objects, defaulted, are judged
// as their manifests are.
func TestCheckObject(t *testing.T) {
	grace := int64(30)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
		SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName,
		Containers: []corev1.Container{{Name: "app", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
	}}
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	if errs := CheckObject(podGVK, p, nil); len(errs) > 0 {
		t.Errorf("a defaulted pod: %v", errs)
	}
	hooked := p.DeepCopy()
	hooked.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	errs := CheckObject(podGVK, hooked, nil)
	if len(errs) != 1 || errs[0].Field != "spec.containers[0].lifecycle" || !strings.HasPrefix(errs[0].Detail, "csisim does not model spec.containers[0].lifecycle") {
		t.Errorf("a pod with a preStop hook: %v", errs)
	}
	if errs := CheckObject(podGVK, hooked, hooked); len(errs) > 0 {
		t.Errorf("an update that leaves the hook: %v", errs)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{Paused: true}}
	if errs := CheckObject(appsv1.SchemeGroupVersion.WithKind("Deployment"), d, nil); len(errs) != 1 || errs[0].Field != "spec.paused" {
		t.Errorf("a paused Deployment: %v", errs)
	}
	if errs := CheckObject(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, &corev1.Secret{}, nil); errs != nil {
		t.Errorf("a Secret: %v", errs)
	}
}

func BenchmarkCheckObject(b *testing.B) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "infinity"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
	}}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	for b.Loop() {
		if errs := CheckObject(gvk, p, p); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// TestNodeErrors: with the real control plane and csisim's kubelets, only
// what a real kubelet acts on is refused.
func TestNodeErrors(t *testing.T) {
	obj := object(t, pod(container+"      lifecycle: {preStop: {exec: {command: [sleep, '5']}}}\n  schedulingGates: [{name: g}]\n"))
	if got := Check(obj, nil); len(got) != 2 {
		t.Fatalf("Check: %+v, want the hook and the gate", got)
	}
	errs := NodeErrors(obj)
	if len(errs) != 1 || errs[0].Field != "spec.containers[0].lifecycle" {
		t.Errorf("NodeErrors: %v, want the hook only", errs)
	}
}
