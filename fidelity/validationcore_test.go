package fidelity

import (
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The core group's kinds for TestValidationAgainstTheRealServer.

var coreV1 = corev1.SchemeGroupVersion

var coreKinds = []*kind{
	{name: "Namespace", gvr: coreV1.WithResource("namespaces"), kind: "Namespace",
		empty: func() runtime.Object { return &corev1.Namespace{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		},
		create: []mutation{
			mut("dotted name", func(r *rand.Rand, o *corev1.Namespace) { o.Name = "a.b-" + o.Name }),
			mut("spec finalizer", func(r *rand.Rand, o *corev1.Namespace) {
				o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerName(pick(r, "example.com/x", "Bad Name", "plain"))}
			}),
		},
		update: []mutation{
			mut("spec finalizers", func(r *rand.Rand, o *corev1.Namespace) { o.Spec.Finalizers = nil }),
		},
		status: []mutation{
			mut("phase", func(r *rand.Rand, o *corev1.Namespace) {
				o.Status.Phase = corev1.NamespacePhase(pick(r, "Terminating", "Bogus", ""))
			}),
			mut("condition", func(r *rand.Rand, o *corev1.Namespace) {
				o.Status.Conditions = []corev1.NamespaceCondition{{Type: corev1.NamespaceConditionType(pick(r, "NamespaceDeletionDiscoveryFailure", "")),
					Status: corev1.ConditionStatus(pick(r, "True", "Maybe"))}}
			}),
		},
	},
	{name: "Node", gvr: coreV1.WithResource("nodes"), kind: "Node",
		empty: func() runtime.Object { return &corev1.Node{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		},
		create: []mutation{
			mut("podCIDR", func(r *rand.Rand, o *corev1.Node) {
				o.Spec.PodCIDR = pick(r, "10.0.0.0/24", "10.0.0.0", "bogus")
				o.Spec.PodCIDRs = []string{o.Spec.PodCIDR}
			}),
			mut("taint", func(r *rand.Rand, o *corev1.Node) {
				o.Spec.Taints = []corev1.Taint{{Key: pick(r, "example.com/t", "bad key"), Value: pick(r, "v", "bad value"),
					Effect: corev1.TaintEffect(pick(r, "NoSchedule", "NoExecute", "Sometimes", ""))}}
			}),
			mut("unschedulable", func(r *rand.Rand, o *corev1.Node) { o.Spec.Unschedulable = true }),
		},
		update: []mutation{
			mut("podCIDR", func(r *rand.Rand, o *corev1.Node) {
				o.Spec.PodCIDR = "10.1.0.0/24"
				o.Spec.PodCIDRs = []string{o.Spec.PodCIDR}
			}),
			mut("providerID", func(r *rand.Rand, o *corev1.Node) { o.Spec.ProviderID = "csisim://" + o.Name }),
			mut("taint", func(r *rand.Rand, o *corev1.Node) {
				o.Spec.Taints = append(o.Spec.Taints, corev1.Taint{Key: "example.com/t", Effect: corev1.TaintEffect(pick(r, "NoSchedule", "Bogus"))})
			}),
		},
		status: []mutation{
			mut("capacity", func(r *rand.Rand, o *corev1.Node) {
				o.Status.Capacity = corev1.ResourceList{corev1.ResourceName(pick(r, "cpu", "memory", "bad name", "example.com/dev")): resource.MustParse(pick(r, "4", "-1", "1Gi"))}
			}),
			mut("address", func(r *rand.Rand, o *corev1.Node) {
				o.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeAddressType(pick(r, "InternalIP", "Bogus")), Address: pick(r, "10.0.0.1", "")}}
			}),
			mut("condition", func(r *rand.Rand, o *corev1.Node) {
				o.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionStatus(pick(r, "True", "Maybe"))}}
			}),
		},
	},
	podKind,
	pvKind,
	pvcKind,
	{name: "Event", gvr: coreV1.WithResource("events"), kind: "Event", namespaced: true,
		empty: func() runtime.Object { return &corev1.Event{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: testNamespace, Name: "app"},
				Reason:         "Started", Message: "started", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "kubelet"}}
		},
		create: []mutation{
			mut("dotted name", func(r *rand.Rand, o *corev1.Event) { o.Name = pick(r, ".", ".18a4e", "app.18a4e5c", "Upper.x") }),
			mut("involvedObject namespace", func(r *rand.Rand, o *corev1.Event) { o.InvolvedObject.Namespace = pick(r, "", "other") }),
			mut("type", func(r *rand.Rand, o *corev1.Event) { o.Type = pick(r, "Warning", "Bogus", "") }),
			mut("eventTime", func(r *rand.Rand, o *corev1.Event) {
				o.EventTime = metav1.NewMicroTime(testTime.Time)
				if r.IntN(2) == 0 {
					o.ReportingController, o.ReportingInstance, o.Action = "example.com/ctl", "ctl-1", "Act"
				}
			}),
			mut("long message", func(r *rand.Rand, o *corev1.Event) { o.Message = strings.Repeat("m", pick(r, 1024, 4097)) }),
		},
	},
	{name: "Secret", gvr: coreV1.WithResource("secrets"), kind: "Secret", namespaced: true,
		empty: func() runtime.Object { return &corev1.Secret{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Data: map[string][]byte{"key": []byte("value")}}
		},
		create: []mutation{
			mut("data key", func(r *rand.Rand, o *corev1.Secret) {
				o.Data[pick(r, "bad key", "..", "a/b", "ok.key_-")] = []byte("x")
			}),
			mut("type", func(r *rand.Rand, o *corev1.Secret) {
				o.Type = corev1.SecretType(pick(r, "kubernetes.io/tls", "kubernetes.io/dockerconfigjson", "kubernetes.io/basic-auth",
					"kubernetes.io/service-account-token", "example.com/custom", "Bad Type"))
			}),
			mut("too large", func(r *rand.Rand, o *corev1.Secret) { o.Data["big"] = make([]byte, 1<<20+1) }),
			mut("stringData", func(r *rand.Rand, o *corev1.Secret) { o.StringData = map[string]string{pick(r, "s", "bad key"): "v"} }),
		},
		update: []mutation{
			mut("type", func(r *rand.Rand, o *corev1.Secret) { o.Type = "example.com/other" }),
			mut("immutable", func(r *rand.Rand, o *corev1.Secret) { o.Immutable = ptr(r.IntN(2) == 0) }),
			mut("data", func(r *rand.Rand, o *corev1.Secret) {
				o.Data = map[string][]byte{pick(r, "key", "bad key"): []byte("new")}
			}),
		},
	},
	{name: "ConfigMap", gvr: coreV1.WithResource("configmaps"), kind: "ConfigMap", namespaced: true,
		empty: func() runtime.Object { return &corev1.ConfigMap{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
				Data: map[string]string{"key": "value"}}
		},
		create: []mutation{
			mut("data key", func(r *rand.Rand, o *corev1.ConfigMap) { o.Data[pick(r, "bad key", ".", "a/b", "ok.key_-")] = "x" }),
			mut("binaryData", func(r *rand.Rand, o *corev1.ConfigMap) {
				o.BinaryData = map[string][]byte{pick(r, "key", "bin"): []byte{1}}
			}),
			mut("too large", func(r *rand.Rand, o *corev1.ConfigMap) { o.Data["big"] = strings.Repeat("x", 1<<20+1) }),
		},
		update: []mutation{
			mut("immutable", func(r *rand.Rand, o *corev1.ConfigMap) { o.Immutable = ptr(r.IntN(2) == 0) }),
			mut("data", func(r *rand.Rand, o *corev1.ConfigMap) { o.Data = map[string]string{pick(r, "key", "bad key"): "new"} }),
		},
	},
	{name: "ServiceAccount", gvr: coreV1.WithResource("serviceaccounts"), kind: "ServiceAccount", namespaced: true,
		empty: func() runtime.Object { return &corev1.ServiceAccount{} },
		valid: func(r *rand.Rand, name string) runtime.Object {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
		},
		create: []mutation{
			mut("imagePullSecrets", func(r *rand.Rand, o *corev1.ServiceAccount) {
				o.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pick(r, "", "regcred", "Bad_Name")}}
			}),
			mut("secrets", func(r *rand.Rand, o *corev1.ServiceAccount) {
				o.Secrets = []corev1.ObjectReference{{Name: pick(r, "token", "")}}
			}),
		},
		update: []mutation{
			mut("automount", func(r *rand.Rand, o *corev1.ServiceAccount) { o.AutomountServiceAccountToken = ptr(false) }),
		},
	},
}

// testTime is the time the generated objects carry where they need one.
var testTime = metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
