package kubelet

// The built-in workload: what the simulated containers do with their
// volumes. No upstream counterpart — on a real node csisim-workload runs in
// the container and checks the same markers (workload/).

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
	"github.com/csisim/csisim/workload"
)

// runWorkload is the pod's container starting: the built-in workload checks
// the data of each of the pod's claim volumes the kubelet has mounted, and
// each check goes into the timeline as a DATA entry (what the
// data-durability invariant reads). Nothing is checked where nothing is
// mounted (a driver that mounts nothing, a raw block volume), and the entry
// says so.
func (k *Kubelet) runWorkload(pod *corev1.Pod) {
	if k.cfg.Recorder == nil {
		return
	}
	mounted := k.actual.podVolumes(pod.UID)
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			continue // set up a moment ago: the claim is there
		}
		d := &trace.DataCheck{PodUID: string(pod.UID), Namespace: pod.Namespace, Pod: pod.Name,
			Claim: claim.Name, Volume: claim.Spec.VolumeName}
		m, ok := mounted[claim.Spec.VolumeName]
		switch {
		case !ok:
			d.Skipped = "the kubelet has not mounted it"
		case m.block:
			d.Skipped = "a raw block volume has no filesystem to write to"
		case k.cfg.SkipMountCheck:
			d.Skipped = "the driver mounts nothing"
		default:
			wp := workload.Pod{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name, Claim: claim.Name}
			rep, err := workload.Check(workloadDir(k.cfg.Dir, pod, v.Name, m), wp, v.PersistentVolumeClaim.ReadOnly)
			d.Wrote, d.Found, d.Corrupt, d.Copied = rep.Wrote, rep.Found, rep.Corrupt, rep.Copied
			if err != nil {
				d.Err = err.Error()
			}
			// What the workload prints, in the log of each container
			// that mounts the volume, as csisim-workload in a real
			// node's container does (logs.go).
			line := func(path string) string { return workload.ReportLine(path, wp, rep) }
			if err != nil {
				line = func(path string) string { return workload.ErrorLine(path, wp, err) }
			}
			if lerr := k.appendContainerLog(pod, v.Name, line); lerr != nil {
				d.Err = errors.Join(err, lerr).Error()
			}
		}
		e := trace.Entry{Kind: trace.Data, Actor: "workload", Verb: "check data",
			Object: fmt.Sprintf("Pod %s/%s volume %s", pod.Namespace, pod.Name, v.Name), Detail: describeCheck(d), Err: d.Err, Check: d}
		k.cfg.Recorder.Add(e)

	}
}

// describeCheck says in a few words what the workload did.
func describeCheck(d *trace.DataCheck) string {
	if d.Skipped != "" {
		return "not checked: " + d.Skipped
	}
	var parts []string
	if d.Wrote {
		parts = append(parts, "wrote marker")
	} else {
		parts = append(parts, "read-only")
	}
	parts = append(parts, fmt.Sprintf("found %d earlier marker(s) of claim %s", len(d.Found), d.Claim))
	if len(d.Copied) > 0 {
		parts = append(parts, fmt.Sprintf("%d marker(s) of other claims (a restore or a clone)", len(d.Copied)))
	}
	if len(d.Corrupt) > 0 {
		parts = append(parts, fmt.Sprintf("%d corrupt", len(d.Corrupt)))
	}
	return strings.Join(parts, ", ")
}
