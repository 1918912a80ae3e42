package fakekube

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pods/log: the API server checks the request against the pod (which
// container, whether the pod has a node) and hands it to the pod's
// kubelet, which checks the container's state and streams its log. The
// kubelet's part is Options.ContainerLogs; the state checks are made here
// from the pod's status, which is what the kubelet's status manager
// holds.

// LogLine is one line a container printed, with when.
type LogLine struct {
	Time time.Time
	Text string
}

// ContainerLogs gives what a container of a pod has printed so far in its
// run of that container ID (from the pod's status; "" for a container
// without one).
type ContainerLogs func(pod *corev1.Pod, container, containerID string) ([]LogLine, error)

// followPoll is how often a followed log is looked at for new lines.
const followPoll = 200 * time.Millisecond

func (s *Server) serveLog(w http.ResponseWriter, r *http.Request, req request) {
	opts, err := decodePodLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	if err := validatePodLogOptions(opts); err != nil {
		writeError(w, err)
		return
	}
	obj, err := s.store.get(req.res, req.namespace, req.name)
	if err != nil {
		writeError(w, err)
		return
	}
	pod := obj.(*corev1.Pod)
	container, err := logContainer(opts.Container, pod)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if pod.Spec.NodeName == "" {
		// No node, no kubelet to ask: an empty log (LogLocation,
		// kubernetes pkg/registry/core/pod/strategy.go).
		w.WriteHeader(http.StatusOK)
		return
	}
	id, err := containerLogStatus(pod, container, opts.Previous)
	if err != nil {
		writeError(w, err)
		return
	}
	lines, err := s.containerLines(pod, container, id)
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
	written := 0
	lines = s.selectLines(lines, opts)
	if !s.writeLines(w, lines, opts, &written) || !opts.Follow {
		return
	}
	// Follow: new lines as they come, until the client goes or the
	// container stops.
	seen := len(lines)
	if opts.TailLines != nil {
		all, _ := s.containerLines(pod, container, id)
		seen = len(all)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	ticker := time.NewTicker(followPoll)
	defer ticker.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
		}
		obj, err := s.store.get(req.res, req.namespace, req.name)
		if err != nil || obj.(*corev1.Pod).UID != pod.UID {
			return
		}
		all, err := s.containerLines(pod, container, id)
		if err != nil {
			return
		}
		if len(all) > seen {
			if !s.writeLines(w, all[seen:], opts, &written) {
				return
			}
			seen = len(all)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}
}

func (s *Server) containerLines(pod *corev1.Pod, container, id string) ([]LogLine, error) {
	if s.containerLogs == nil {
		return nil, nil
	}
	lines, err := s.containerLogs(pod, container, id)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the log of container %q in pod %q: %w", container, pod.Name, err))
	}
	return lines, nil
}

// selectLines applies sinceSeconds, sinceTime and tailLines.
func (s *Server) selectLines(lines []LogLine, opts *corev1.PodLogOptions) []LogLine {
	var since time.Time
	switch {
	case opts.SinceSeconds != nil:
		since = s.clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	}
	out := lines[:0:0]
	for _, l := range lines {
		if !l.Time.Before(since) {
			out = append(out, l)
		}
	}
	if opts.TailLines != nil && int64(len(out)) > *opts.TailLines {
		out = out[int64(len(out))-*opts.TailLines:]
	}
	return out
}

// writeLines writes lines (with their times if asked) up to limitBytes
// in all; false once the limit is reached or the client has gone.
func (s *Server) writeLines(w http.ResponseWriter, lines []LogLine, opts *corev1.PodLogOptions, written *int) bool {
	var b bytes.Buffer
	for _, l := range lines {
		if opts.Timestamps {
			b.WriteString(l.Time.UTC().Format(time.RFC3339Nano) + " ")
		}
		b.WriteString(l.Text + "\n")
	}
	data := b.Bytes()
	if opts.LimitBytes != nil && int64(*written+len(data)) >= *opts.LimitBytes {
		data = data[:*opts.LimitBytes-int64(*written)]
		_, _ = w.Write(data)
		return false
	}
	n, err := w.Write(data)
	*written += n
	return err == nil
}

// decodePodLogOptions reads the query parameters of pods/log.
func decodePodLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{Container: q.Get("container")}
	var errs []string
	boolean := func(name string, into *bool) {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, err.Error())
			}
			*into = b
		}
	}
	integer := func(name string) *int64 {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, err.Error())
		}
		return &n
	}
	boolean("follow", &opts.Follow)
	boolean("previous", &opts.Previous)
	boolean("timestamps", &opts.Timestamps)
	boolean("insecureSkipTLSVerifyBackend", &opts.InsecureSkipTLSVerifyBackend)
	opts.SinceSeconds, opts.TailLines, opts.LimitBytes = integer("sinceSeconds"), integer("tailLines"), integer("limitBytes")
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, err.Error())
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewBadRequest(strings.Join(errs, ", "))
	}
	return opts, nil
}

// validatePodLogOptions refuses what the real server's validation does
// (ValidatePodLogOptions, kubernetes pkg/apis/core/validation/validation.go).
func validatePodLogOptions(opts *corev1.PodLogOptions) error {
	var msgs []string
	if opts.TailLines != nil && *opts.TailLines < 0 {
		msgs = append(msgs, "tailLines: Invalid value: "+fmt.Sprint(*opts.TailLines)+": must be greater than or equal to 0")
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		msgs = append(msgs, "limitBytes: Invalid value: "+fmt.Sprint(*opts.LimitBytes)+": must be greater than 0")
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		msgs = append(msgs, "sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		msgs = append(msgs, "sinceSeconds: Invalid value: "+fmt.Sprint(*opts.SinceSeconds)+": must be greater than 0")
	}
	if len(msgs) == 0 {
		return nil
	}
	msg := msgs[0]
	if len(msgs) > 1 {
		msg = fmt.Sprintf("%v", msgs)
	}
	return apierrors.NewBadRequest(msg)
}

// logContainer is the container the log is asked of, or the real API
// server's error (validateContainer, kubernetes
// pkg/registry/core/pod/strategy.go).
func logContainer(container string, pod *corev1.Pod) (string, error) {
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		var names []string
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.Name == container {
				return container, nil
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == container {
			return container, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// containerLogStatus is the kubelet's check that the container has a log
// to show, and the ID of the container whose log it shows — the running
// one, the one that terminated last, or with previous the one before —
// with its errors, which the API server passes on as a Bad Request
// (validateContainerLogStatus, kubernetes pkg/kubelet/kubelet_pods.go;
// GenericHttpResponseChecker, k8s.io/apiserver
// pkg/registry/generic/rest/response_checker.go).
func containerLogStatus(pod *corev1.Pod, container string, previous bool) (string, error) {
	var status *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container && status == nil {
				status = &list[i]
			}
		}
	}
	bad := func(format string, a ...any) (string, error) {
		return "", apierrors.NewBadRequest(fmt.Sprintf(format, a...))
	}
	if status == nil {
		return bad("container %q in pod %q is not available", container, pod.Name)
	}
	last := status.LastTerminationState.Terminated
	switch st := status.State; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return bad("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return last.ContainerID, nil
	case st.Running != nil:
		return status.ContainerID, nil
	case st.Terminated != nil:
		if st.Terminated.ContainerID != "" {
			return st.Terminated.ContainerID, nil
		}
		if last == nil || last.ContainerID == "" {
			return bad("container %q in pod %q is terminated", container, pod.Name)
		}
		return last.ContainerID, nil
	case last != nil:
		if last.ContainerID == "" {
			return bad("container %q in pod %q is terminated", container, pod.Name)
		}
		return last.ContainerID, nil
	case st.Waiting != nil:
		switch st.Waiting.Reason {
		case "ErrImagePull":
			return bad("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case "ImagePullBackOff":
			return bad("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		}
		return bad("container %q in pod %q is waiting to start: %v", container, pod.Name, st.Waiting.Reason)
	}
	return bad("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
}
