package realcluster

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/trace"
)

// On real nodes the workload runs in the pods' containers, and says what it
// found in its log (cmd/csisim-workload). Each pod that starts running on a
// real node has its log read, as `kubectl logs` would, and every line turned
// into the DATA entry the simulated kubelet records for its own containers,
// so the data-durability invariant judges real pods too.

// workloadLine is one volume's line of csisim-workload's log.
var workloadLine = regexp.MustCompile(`^csisim-workload: (\S+) \(claim ([^/]+)/([^)]+)\): (wrote marker of pod \S+|read-only, wrote no marker); found \d+ earlier marker\(s\)(?:: (.*?))?; corrupt: (.*)$`)

// parseWorkloadLine reads one line; ok is false for any other line.
func parseWorkloadLine(line string) (path string, d trace.DataCheck, ok bool) {
	m := workloadLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", d, false
	}
	d.Namespace, d.Claim = m[2], m[3]
	d.Wrote = strings.HasPrefix(m[4], "wrote")
	if m[5] != "" {
		d.Found = strings.Split(m[5], ", ")
	}
	if m[6] != "none" {
		d.Corrupt = strings.Split(m[6], ", ")
	}
	return m[1], d, true
}

// workloadLogs reads the logs of the pods that start running on real nodes.
type workloadLogs struct {
	cs   kubernetes.Interface
	rec  *trace.Recorder
	real func(node string) bool
	mu   sync.Mutex
	read map[types.UID]bool
	wg   sync.WaitGroup
}

// watchWorkloadLogs starts reading; it stops when ctx is done.
func (c *Cluster) watchWorkloadLogs(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.clientConfig("csisim-workload-logs"))
	if err != nil {
		return err
	}
	w := &workloadLogs{cs: cs, rec: c.rec, real: c.isReal, read: map[types.UID]bool{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { w.observe(ctx, obj) },
	})
	factory.Start(ctx.Done())
	c.stopLogs = func() { w.wg.Wait(); factory.Shutdown() }
	return nil
}

func (w *workloadLogs) observe(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Status.Phase != corev1.PodRunning || !w.real(pod.Spec.NodeName) {
		return
	}
	w.mu.Lock()
	done := w.read[pod.UID]
	w.read[pod.UID] = true
	w.mu.Unlock()
	if done {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.readPod(ctx, pod.DeepCopy())
	}()
}

// readPod reads the first container's log until it has a line for each of
// the claims the container mounts (the workload prints them at once), for
// up to 20 s, and records them.
func (w *workloadLogs) readPod(ctx context.Context, pod *corev1.Pod) {
	if len(pod.Spec.Containers) == 0 {
		return
	}
	want := 0
	for _, a := range pod.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--volume=") || strings.HasPrefix(a, "--read-only-volume=") {
			want++
		}
	}
	if want == 0 {
		return
	}
	var lines []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		raw, err := w.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: pod.Spec.Containers[0].Name}).DoRaw(ctx)
		if err != nil {
			continue
		}
		lines = lines[:0]
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			if _, _, ok := parseWorkloadLine(sc.Text()); ok {
				lines = append(lines, sc.Text())
			}
		}
		if len(lines) >= want {
			break
		}
	}
	for _, line := range lines {
		path, d, _ := parseWorkloadLine(line)
		d.PodUID, d.Pod = string(pod.UID), pod.Name
		if claim, err := w.cs.CoreV1().PersistentVolumeClaims(d.Namespace).Get(ctx, d.Claim, metav1.GetOptions{}); err == nil {
			d.Volume = claim.Spec.VolumeName
		}
		detail := "found " + fmt.Sprint(len(d.Found)) + " earlier marker(s) of claim " + d.Claim
		if d.Wrote {
			detail = "wrote marker, " + detail
		}
		w.rec.Add(trace.Entry{Kind: trace.Data, Actor: "workload", Verb: "check data",
			Object: fmt.Sprintf("Pod %s/%s volume at %s", pod.Namespace, pod.Name, path), Detail: detail + " (from its log)", Check: &d})
	}
}
