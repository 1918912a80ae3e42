package kubelet

// The container environment a subPathExpr is expanded with, as the real
// kubelet makes it (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables,
// podFieldSelectorRuntimeValue; kubecontainer.ExpandContainerVolumeMounts;
// the $(VAR) syntax of third_party/forked/golang/expansion): envFrom
// first, then env in order, each value expanded with the variables before
// it; downward API fields, ConfigMap and Secret keys resolved. The
// service links' variables (KUBERNETES_SERVICE_HOST and the like) are not
// made: no subPathExpr a user writes names them.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// expandSubPathExpr is ExpandContainerVolumeMounts: every variable the
// expression names must have a value that is not empty.
func expandSubPathExpr(expr string, env map[string]string) (string, error) {
	var missing []string
	out := expansion.Expand(expr, func(name string) string {
		v := env[name]
		if v == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// containerEnv is the container's environment (podIP: the sandbox's).
func (k *Kubelet) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIP string) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		data, err := k.envFromData(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		for key, v := range data {
			env[from.Prefix+key] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expansion.Expand(e.Value, expansion.MappingFuncFor(env)) // an unknown reference stays as written
			continue
		}
		v, ok, err := k.envValueFrom(ctx, pod, e.ValueFrom, podIP)
		if err != nil {
			return nil, err
		}
		if ok {
			env[e.Name] = v
		}
	}
	return env, nil
}

// envFromData is the data of an envFrom source; nothing for an optional
// one that is missing.
func (k *Kubelet) envFromData(ctx context.Context, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := k.client.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := k.client.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for key, v := range s.Data {
			out[key] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

// envValueFrom resolves one variable's valueFrom; ok false for an
// optional key that is missing.
func (k *Kubelet) envValueFrom(ctx context.Context, pod *corev1.Pod, from *corev1.EnvVarSource, podIP string) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := k.podField(pod, from.FieldRef.FieldPath, podIP)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalMissing(err, optional)
		}
		v, ok := cm.Data[ref.Key]
		if !ok && !optional {
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, ok, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalMissing(err, optional)
		}
		v, ok := s.Data[ref.Key]
		if !ok && !optional {
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), ok, nil
	}
	// resourceFieldRef, fileKeyRef: a value csisim does not compute.
	return "", false, fmt.Errorf("csisim does not model this env valueFrom in a subPathExpr's environment (it would change the subPath); use --backend realkube")
}

// optionalMissing: a missing optional object is no error.
func optionalMissing(err error, optional bool) error {
	if optional && apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podField is the downward API's value of a pod field
// (podFieldSelectorRuntimeValue and ExtractFieldPathAsString).
func (k *Kubelet) podField(pod *corev1.Pod, path, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return k.hostIP(), nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}
