package kubelet

// The kubelet's volume stats metrics: what NodeGetVolumeStats answered for
// each claim's volume on the node, as the real kubelet's volume stats
// collector exposes them on its /metrics endpoint
// (pkg/kubelet/metrics/collectors/volume_stats.go): the gauges
// kubelet_volume_stats_{capacity,available,used}_bytes and
// kubelet_volume_stats_inodes{,_free,_used}, labelled by the claim's
// namespace and name, one series per claim however many pods use it. They
// are rendered by k8s.io/component-base's metrics registry, the one the
// kubelet uses. A volume without a claim (CSI inline) has none.

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/common/expfmt"
	"k8s.io/component-base/metrics"
)

// claimRef names a claim by namespace and name.
type claimRef struct{ namespace, name string }

// volumeUsage is one NodeGetVolumeStats answer, as the kubelet's CSI
// metrics provider reads it: bytes and inodes, 0 where the driver gave no
// such usage.
type volumeUsage struct {
	capacity, available, used      int64
	inodes, inodesFree, inodesUsed int64
}

// volumeStats is the latest usage of each claim's volume on the node.
type volumeStats struct {
	mu      sync.Mutex
	byClaim map[claimRef]volumeUsage
}

func (s *volumeStats) replace(fresh map[claimRef]volumeUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byClaim = fresh
}

func (s *volumeStats) snapshot() map[claimRef]volumeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byClaim
}

// noteVolumeStats keeps the answer for the claim bound to volume pvName.
func (k *Kubelet) noteVolumeStats(fresh map[claimRef]volumeUsage, pvName string, resp *csi.NodeGetVolumeStatsResponse) {
	pv, err := k.volumes.Get(pvName)
	if err != nil || pv.Spec.ClaimRef == nil {
		return
	}
	ref := claimRef{pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name}
	if _, seen := fresh[ref]; seen {
		return // the collector reports a claim once
	}
	var u volumeUsage
	for _, usage := range resp.GetUsage() {
		switch usage.GetUnit() {
		case csi.VolumeUsage_BYTES:
			u.capacity, u.available, u.used = usage.GetTotal(), usage.GetAvailable(), usage.GetUsed()
		case csi.VolumeUsage_INODES:
			u.inodes, u.inodesFree, u.inodesUsed = usage.GetTotal(), usage.GetAvailable(), usage.GetUsed()
		}
	}
	fresh[ref] = u
}

// volumeStatsMetric is one gauge of the collector: its name, help and how
// it reads a usage.
type volumeStatsMetric struct {
	desc  *metrics.Desc
	value func(volumeUsage) int64
}

func newVolumeStatsMetrics() []volumeStatsMetric {
	gauge := func(name, help string, value func(volumeUsage) int64) volumeStatsMetric {
		return volumeStatsMetric{desc: metrics.NewDesc("kubelet_volume_stats_"+name, help,
			[]string{"namespace", "persistentvolumeclaim"}, nil, metrics.ALPHA, ""), value: value}
	}
	return []volumeStatsMetric{
		gauge("capacity_bytes", "Capacity in bytes of the volume", func(u volumeUsage) int64 { return u.capacity }),
		gauge("available_bytes", "Number of available bytes in the volume", func(u volumeUsage) int64 { return u.available }),
		gauge("used_bytes", "Number of used bytes in the volume", func(u volumeUsage) int64 { return u.used }),
		gauge("inodes", "Maximum number of inodes in the volume", func(u volumeUsage) int64 { return u.inodes }),
		gauge("inodes_free", "Number of free inodes in the volume", func(u volumeUsage) int64 { return u.inodesFree }),
		gauge("inodes_used", "Number of used inodes in the volume", func(u volumeUsage) int64 { return u.inodesUsed }),
	}
}

// volumeStatsCollector is a component-base StableCollector of the usage.
type volumeStatsCollector struct {
	metrics.BaseStableCollector
	metrics []volumeStatsMetric
	usage   map[claimRef]volumeUsage
}

func (c *volumeStatsCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c *volumeStatsCollector) CollectWithStability(ch chan<- metrics.Metric) {
	refs := make([]claimRef, 0, len(c.usage))
	for ref := range c.usage {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, cmpClaimRef)
	for _, ref := range refs {
		for _, m := range c.metrics {
			ch <- metrics.NewLazyConstMetric(m.desc, metrics.GaugeValue, float64(m.value(c.usage[ref])), ref.namespace, ref.name)
		}
	}
}

func cmpClaimRef(a, b claimRef) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

// VolumeStatsMetrics renders the node's volume stats metrics in the
// Prometheus text format, as the kubelet's /metrics serves them.
func (k *Kubelet) VolumeStatsMetrics() ([]byte, error) {
	reg := metrics.NewKubeRegistry()
	reg.CustomMustRegister(&volumeStatsCollector{metrics: newVolumeStatsMetrics(), usage: k.volumeStats.snapshot()})
	families, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering the volume stats metrics: %w", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, VolumeStatsContentType)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return nil, fmt.Errorf("encoding the volume stats metrics: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// VolumeStatsContentType is the content type of VolumeStatsMetrics: the
// Prometheus text format, as a kubelet answers a plain scrape.
var VolumeStatsContentType = expfmt.NewFormat(expfmt.TypeTextPlain)
