package scenarios

// A check of a container's log (log: CONTAINER on object: pod/NAME): what
// `kubectl logs POD -c CONTAINER` shows, read from pods/log as kubectl
// reads it, as the object {lines: [...]} the check's jsonPath looks at.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// logReader is an objectStore that can read a container's log.
type logReader interface {
	// log is the lines of the log of container of the pod; the API
	// server's refusal (the container is waiting to start, ...) is a
	// BadRequest error.
	log(ctx context.Context, pod, namespace, container string) ([]string, error)
}

func (k *kubeObjects) log(ctx context.Context, pod, namespace, container string) ([]string, error) {
	if k.core == nil {
		return nil, errors.New("no client for pods/log")
	}
	if namespace == "" {
		namespace = defaultNamespace
	}
	raw, err := k.core.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(raw), "\n")
	if text == "" {
		return []string{}, nil
	}
	return strings.Split(text, "\n"), nil
}

// lookLog evaluates a log check once: the log as {lines: [...]}; a pod
// that is not there, or a log the API server will not give yet (its
// container waiting to start), does not hold, and says why.
func (ex *executor) lookLog(ctx context.Context, c *Check) (verdict, map[string]any, error) {
	r, ok := ex.objects.(logReader)
	if !ok {
		return verdict{seen: "error: this cluster cannot read logs"}, nil, errors.New("this cluster cannot read logs")
	}
	lines, err := r.log(ctx, c.Object.Name, c.Namespace, c.Log)
	switch {
	case apierrors.IsNotFound(err):
		return verdict{seen: seenNotFound}, nil, nil
	case apierrors.IsBadRequest(err):
		return verdict{seen: err.Error()}, nil, nil
	case err != nil:
		return verdict{seen: "error: " + err.Error()}, nil, fmt.Errorf("read the log of container %s of %s: %w", c.Log, c.Object, err)
	}
	items := make([]any, len(lines))
	for i, l := range lines {
		items[i] = l
	}
	obj := map[string]any{"lines": items}
	return c.evaluate(obj), obj, nil
}
