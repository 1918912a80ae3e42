package kubelet

import "github.com/csisim/csisim/sim/controller"

// Component is what the kubelet runs once registered: its volume manager's
// worker, and on their periods its node status heartbeat, its pod resync
// and its volume stats.
func (k *Kubelet) Component() controller.Component {
	return controller.Component{Workers: k.Workers(), Periodic: []controller.Periodic{
		{Every: k.cfg.Timing.NodeStatusUpdateFrequency(), Run: k.Heartbeat},
		{Every: SyncFrequency, Run: k.Resync},
		{Every: VolumeStatsPeriod, Run: k.CollectVolumeStats},
	}}
}
