package fakekube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

func setPodDefaults(s *corev1.PodSpec) {
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
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptrTo(true)
	}
	if s.Priority == nil {
		s.Priority = ptrTo(int32(0))
	}
	if s.PreemptionPolicy == nil {
		s.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
	for i := range s.Containers {
		setContainerDefaults(&s.Containers[i])
	}
	for i := range s.InitContainers {
		setContainerDefaults(&s.InitContainers[i])
	}
	for _, key := range []string{taintNodeNotReady, taintNodeUnreachable} {
		if !hasNoExecuteToleration(s.Tolerations, key) {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(defaultTolerationSecond)})
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
