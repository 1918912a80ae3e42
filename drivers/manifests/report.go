package manifests

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Containers says what csisim does with each container of the manifests'
// workloads, given the local command that runs the driver's image: in this
// slice, the node DaemonSet's placement and its driver's image are
// honoured; the containers' own args, env, mounts and security context,
// the sidecars and the controller's containers are not (the profile
// starts the controller plugin and simulated sidecars, and every pod runs
// csisim's workload).
func (s *Set) Containers(command string) (honoured, notHonoured []string) {
	np := s.Node
	honoured = append(honoured,
		fmt.Sprintf("DaemonSet %s: its pods are placed by the DaemonSet controller (nodeSelector, node affinity, tolerations); "+
			"the driver is registered with a node's kubelet only while its pod there is Running", np.Key()),
		fmt.Sprintf("container %s (image %s): the node plugin, run as %s", np.Driver, np.Image, command))
	notHonoured = append(notHonoured,
		fmt.Sprintf("container %s of DaemonSet %s: args, env, volumeMounts and securityContext (the profile's node command and arguments run instead)",
			np.Driver, np.Key()),
		fmt.Sprintf("container %s of DaemonSet %s: its flags (--csi-address=%s, --kubelet-registration-path=%s); the simulated registration follows the pod",
			np.Registrar, np.Key(), np.CSIAddress, np.RegistrationPath))
	for _, o := range s.Objects {
		template, ok := podTemplate(o)
		if !ok {
			continue
		}
		key := o.Obj.GetKind() + " " + o.Obj.GetNamespace() + "/" + o.Obj.GetName()
		var others []string
		for _, c := range template.Spec.Containers {
			if o.Obj.GetKind() == "DaemonSet" && o.Obj.GetName() == np.DaemonSet.Name && (c.Name == np.Driver || c.Name == np.Registrar) {
				continue
			}
			others = append(others, c.Name)
		}
		if len(others) > 0 {
			notHonoured = append(notHonoured, fmt.Sprintf("%s: containers %s are not run (their pods run csisim's workload; "+
				"the controller plugin and the sidecars come from the driver profile)", key, strings.Join(others, ", ")))
		}
	}
	return honoured, notHonoured
}

// podTemplate is the pod template of a Deployment, StatefulSet or
// DaemonSet.
func podTemplate(o Object) (corev1.PodTemplateSpec, bool) {
	var t corev1.PodTemplateSpec
	var err error
	switch o.Obj.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	case "StatefulSet":
		var d appsv1.StatefulSet
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	default:
		return t, false
	}
	return t, err == nil
}
