package scenarios

import (
	yaml "go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/fault"
)

// MaxMountBusy bounds mountBusy's for: the kubelet retries a failed
// unmount with a backoff that doubles up to 2m2s (kubernetes
// pkg/volume/util/nestedpendingoperations), so after an hour it has long
// tried every 2 minutes and a longer hold shows nothing more, as
// MaxAPIOutage says of an outage; "300m" for "300s" is a typo that would
// run the simulation for hours of cluster time.
const MaxMountBusy = MaxAPIOutage

// mountBusy reads mountBusy: {pod, namespace?, volume, for}: the pod's
// mount of its volume (as spec.volumes names it) is held busy for that
// long. Whether the pod and its volume are there is known only when the
// step runs.
func (p *parser) mountBusy(n *yaml.Node) *fault.Fault {
	key := FaultStepKey(fault.MountBusy)
	f, ok := p.mapping(n, key, "pod", "namespace", "volume", "for")
	if !ok {
		return nil
	}
	if missing := missingFields(f, []string{"pod", "volume", "for"}); len(missing) > 0 {
		p.fail(n, "%s needs %s", key, listWords(missing, ""))
		return nil
	}
	flt := &fault.Fault{Kind: fault.MountBusy}
	flt.Busy.Pod, ok = p.nonEmpty(f.vals["pod"], "pod")
	if f.has("namespace") {
		flt.Namespace, ok = p.nonEmptyAnd(ok, f.vals["namespace"], "namespace")
	}
	flt.Busy.Volume, ok = p.nonEmptyAnd(ok, f.vals["volume"], "volume")
	if ok {
		flt.Busy.For, ok = p.boundedDuration(f.vals["for"], "for", MaxMountBusy)
	}
	if !ok {
		return nil
	}
	return flt
}
