package fakekube

import (
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/timing"
)

// The annotations that mark the StorageClass claims without one get (the
// beta one is still honoured by the real plugin).
const (
	annDefaultStorageClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// annBetaStorageClass is the claim annotation that named a class before
// spec.storageClassName existed; it still wins over the field.
const annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"

// undeletableNamespaces are the namespaces the NamespaceLifecycle
// admission plugin refuses to delete: default, kube-system and
// kube-public (its immortalNamespaces; kube-node-lease may go).
var undeletableNamespaces = map[string]bool{
	metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true,
}

// Finalizers added on creation by the API server's
// StorageObjectInUseProtection admission plugin.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// admitCreateLocked runs the mutating admission plugins of a default API
// server on an object being created: StorageObjectInUseProtection adds
// its finalizer to claims and volumes, DefaultStorageClass gives a claim
// that names no class the default one, Priority gives a pod its priority,
// DefaultTolerationSeconds its tolerations, TaintNodesByCondition a new
// Node the not-ready taint.
func (s *store) admitCreateLocked(res *resource, obj runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.Node:
		admitNodeTaints(o)
	case *corev1.PersistentVolumeClaim:
		addFinalizer(&o.ObjectMeta, PVCProtectionFinalizer)
		if o.Spec.StorageClassName == nil {
			if name := s.defaultStorageClassLocked(); name != "" {
				o.Spec.StorageClassName = &name
			}
		}
	case *corev1.PersistentVolume:
		addFinalizer(&o.ObjectMeta, PVProtectionFinalizer)
	case *corev1.Pod:
		admitTolerations(o, s.tolerationSeconds)
		return s.admitPriorityLocked(res, o)
	}
	return nil
}

// admitUpdate runs the mutating admission plugins of a default API server
// on an update of a main resource: Priority keeps a pod's priority if the
// update leaves it out; DefaultTolerationSeconds, as on create.
func admitUpdate(obj, old runtime.Object, tolerationSeconds int64) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	was := old.(*corev1.Pod)
	if pod.Spec.Priority == nil {
		pod.Spec.Priority = was.Spec.Priority
	}
	if pod.Spec.PreemptionPolicy == nil {
		pod.Spec.PreemptionPolicy = was.Spec.PreemptionPolicy
	}
	admitTolerations(pod, tolerationSeconds)
}

// admissionName is the name an admission plugin's refusal gives: before
// the registry generates a name, the generateName, and without either
// "Unknown" (k8s.io/apiserver pkg/admission/errors.go, extractResourceName).
func admissionName(m metav1.Object) string {
	switch {
	case m.GetName() != "":
		return m.GetName()
	case m.GetGenerateName() != "":
		return m.GetGenerateName()
	}
	return "Unknown"
}

func addFinalizer(m *metav1.ObjectMeta, f string) {
	if !slices.Contains(m.Finalizers, f) {
		m.Finalizers = append(m.Finalizers, f)
	}
}

// Taint keys whose toleration the DefaultTolerationSeconds admission plugin
// adds to every pod, so that pods on a lost node are evicted after 300 s
// (kube-apiserver's default; Options.DefaultTolerationSeconds).
const (
	taintNodeNotReady        = "node.kubernetes.io/not-ready"
	taintNodeUnreachable     = "node.kubernetes.io/unreachable"
	defaultTolerationSeconds = int64(timing.DefaultTolerationSeconds)
)

// admitNodeTaints is the TaintNodesByCondition admission plugin
// (kubernetes plugin/pkg/admission/nodetaint/admission.go, on by
// default): a Node is created with the node.kubernetes.io/not-ready
// NoSchedule taint, unless it has one of that key and effect already, so
// that nothing is scheduled to it before the node lifecycle controller has
// seen it Ready and taken the taint off.
func admitNodeTaints(node *corev1.Node) {
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == taintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		return
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: taintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
}

// admitTolerations is the DefaultTolerationSeconds admission plugin
// (kubernetes plugin/pkg/admission/defaulttolerationseconds/admission.go):
// a pod that tolerates neither taint with NoExecute (a toleration with no
// key, or no effect, counts) gets one for seconds.
func admitTolerations(pod *corev1.Pod, seconds int64) {
	for _, key := range []string{taintNodeNotReady, taintNodeUnreachable} {
		tolerated := slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
			return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
		})
		if !tolerated {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(seconds)})
		}
	}
}

// defaultStorageClassLocked is the default StorageClass: of several, the
// newest (then the first by name), as the real plugin picks.
func (s *store) defaultStorageClassLocked() string {
	var best *storagev1.StorageClass
	for _, o := range s.objects[s.reg.byGVR[storageV1.WithResource("storageclasses")]] {
		sc := o.(*storagev1.StorageClass)
		if sc.Annotations[annDefaultStorageClass] != "true" && sc.Annotations[annBetaDefaultStorageClass] != "true" {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// validateAdmissionLocked runs the validating admission plugins of a
// default API server that judge updates, then csisim's own
// (ownAdmissionLocked).
func (s *store) validateAdmissionLocked(res *resource, name string, obj, old runtime.Object) error {
	if err := s.validateResizeLocked(res, name, obj, old); err != nil {
		return err
	}
	return s.ownAdmissionLocked(res, obj, old)
}

// ownAdmissionLocked is csisim's own validating admission step
// (Options.Refuse): what the simulated cluster would not carry out is
// refused with 403 Forbidden, the status of an admission plugin's
// refusal — the object is valid (so not 422 Invalid), the cluster will
// not act on it. Each field's message says why; they are joined as
// kube-apiserver joins a plugin's reasons. old is nil on create.
func (s *store) ownAdmissionLocked(res *resource, obj, old runtime.Object) error {
	if s.refuse == nil {
		return nil
	}
	errs := s.refuse(res.gvk(), obj, old)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Detail
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewForbidden(res.groupResource(), admissionName(m), errors.New(strings.Join(msgs, "; ")))
}

// validateResizeLocked is PersistentVolumeClaimResize: it lets a claim's
// storage request grow only when the claim is bound and its class allows
// expansion
// (kubernetes plugin/pkg/admission/storage/persistentvolume/resize/admission.go).
func (s *store) validateResizeLocked(res *resource, name string, obj, old runtime.Object) error {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	was := old.(*corev1.PersistentVolumeClaim)
	newSize := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := was.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if was.Status.Phase != corev1.ClaimBound {
		//lint:ignore ST1005 the real plugin's words
		return apierrors.NewForbidden(res.groupResource(), name, errors.New("Only bound persistent volume claims can be expanded"))
	}
	if !s.allowsResizeLocked(claimClass(claim), claimClass(was)) {
		return apierrors.NewForbidden(res.groupResource(), name, errors.New("only dynamically provisioned pvc can be resized and "+
			"the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// allowsResizeLocked says whether the class, the same before and after,
// exists and sets allowVolumeExpansion: true.
func (s *store) allowsResizeLocked(class, was string) bool {
	if class == "" || was == "" || class != was {
		return false
	}
	o, ok := s.objects[s.reg.byGVR[storageV1.WithResource("storageclasses")]][objectKey("", class)]
	if !ok {
		return false
	}
	sc := o.(*storagev1.StorageClass)
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}

// claimClass is a claim's class: its beta annotation, else its field.
func claimClass(claim *corev1.PersistentVolumeClaim) string {
	if class, ok := claim.Annotations[annBetaStorageClass]; ok {
		return class
	}
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}
