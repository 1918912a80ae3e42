package fakekube

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// setDefaults fills in what the real server's defaulting (the SetDefaults_
// functions of the API groups) and default admission plugins fill in for
// the kinds of the volume lifecycle, so that objects read back look as they
// do on a real cluster.
func setDefaults(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		if o.Spec.PersistentVolumeReclaimPolicy == "" {
			o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		if o.Spec.VolumeMode == nil {
			o.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
	case *corev1.PersistentVolumeClaim:
		if o.Spec.VolumeMode == nil {
			o.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
	case *storagev1.StorageClass:
		if o.ReclaimPolicy == nil {
			o.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimDelete)
		}
		if o.VolumeBindingMode == nil {
			o.VolumeBindingMode = ptrTo(storagev1.VolumeBindingImmediate)
		}
	case *storagev1.CSIDriver:
		setCSIDriverDefaults(&o.Spec)
	case *schedulingv1.PriorityClass:
		if o.PreemptionPolicy == nil {
			o.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
		}
	case *corev1.Pod:
		setPodDefaults(&o.Spec)
	case *appsv1.Deployment:
		setDeploymentDefaults(o)
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo(int32(1))
		}
		setPodSpecDefaults(&o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		setStatefulSetDefaults(o)
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	}
}

func setCSIDriverDefaults(s *storagev1.CSIDriverSpec) {
	if s.AttachRequired == nil {
		s.AttachRequired = ptrTo(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptrTo(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptrTo(false)
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptrTo(false)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptrTo(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = ptrTo(false)
	}
}

// Taint keys whose toleration the DefaultTolerationSeconds admission plugin
// adds to every pod, so that pods on a lost node are evicted after 300 s.
const (
	taintNodeNotReady       = "node.kubernetes.io/not-ready"
	taintNodeUnreachable    = "node.kubernetes.io/unreachable"
	defaultTolerationSecond = int64(300)
)

// setPodDefaults: a pod's spec gets the defaults of every pod spec, and
// what the Priority and DefaultTolerationSeconds admission plugins add to
// pods (not to pod templates).
func setPodDefaults(s *corev1.PodSpec) {
	setPodSpecDefaults(s)
	// The pod strategy's, not the pod spec defaults': a template has none
	// (a real ControllerRevision's template shows it).
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptrTo(true)
	}
	if s.Priority == nil {
		s.Priority = ptrTo(int32(0))
	}
	if s.PreemptionPolicy == nil {
		s.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
	for _, key := range []string{taintNodeNotReady, taintNodeUnreachable} {
		if !hasNoExecuteToleration(s.Tolerations, key) {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(defaultTolerationSecond)})
		}
	}
}

// setPodSpecDefaults is SetDefaults_PodSpec and its containers' defaults
// (kubernetes pkg/apis/core/v1/defaults.go), for pods and pod templates.
func setPodSpecDefaults(s *corev1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i])
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i])
	}
}

// setDeploymentDefaults is SetDefaults_Deployment (kubernetes
// pkg/apis/apps/v1/defaults.go) and the template's pod spec defaults.
func setDeploymentDefaults(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo(int32(1))
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrTo(int32(600))
	}
	setPodSpecDefaults(&d.Spec.Template.Spec)
}

// setStatefulSetDefaults is SetDefaults_StatefulSet (kubernetes
// pkg/apis/apps/v1/defaults.go; StatefulSetAutoDeletePVC is GA), the
// template's pod spec defaults and the claim templates' claim defaults.
func setStatefulSetDefaults(s *appsv1.StatefulSet) {
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &s.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil && us.RollingUpdate.Partition == nil {
		us.RollingUpdate.Partition = ptrTo(int32(0))
	}
	// MaxUnavailableStatefulSet is on in v1.37: maxUnavailable defaults
	// to 1 (a real v1.37.2 server shows it).
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil && us.RollingUpdate.MaxUnavailable == nil {
		us.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = ptrTo(int32(1))
	}
	if s.Spec.RevisionHistoryLimit == nil {
		s.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	setPodSpecDefaults(&s.Spec.Template.Spec)
	for i := range s.Spec.VolumeClaimTemplates {
		t := &s.Spec.VolumeClaimTemplates[i]
		if t.Spec.VolumeMode == nil {
			t.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
		if t.Status.Phase == "" {
			t.Status.Phase = corev1.ClaimPending
		}
	}
}

// hasNoExecuteToleration: the pod already tolerates the NoExecute taint
// key, so the admission plugin adds nothing for it.
func hasNoExecuteToleration(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			return true
		}
	}
	return false
}

func setContainerDefaults(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if tag := imageTag(c.Image); tag == "" || tag == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
}

// imageTag is the tag of an image reference ("" when none; digests count
// as a tag).
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		return image[i+1:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[i+1:]
	}
	return ""
}
