package clusterprofile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/csiclient"
)

// verifier refuses a driver that is not what profile p says it is: one
// that answers GetPluginInfo with another name than name (the profile's,
// or the one it was started under; "" when the profile does not say), or
// whose answers contradict what the profile declares
// (profile.Contradictions). It is the cluster's VerifyDriver: the run is
// refused before any component starts, with every contradiction named.
func verifier(p *profile.Profile, name string) func(driverinfo.Info) error {
	return func(info driverinfo.Info) error {
		var problems []string
		if name != "" && info.Name != name {
			problems = append(problems, fmt.Sprintf("name: the profile says %s, but the driver answers GetPluginInfo with %s", name, info.Name))
		}
		problems = append(problems, p.Contradictions(info)...)
		return refusal(p, problems, info)
	}
}

// refusal is the error that refuses profile p for problems, nil if there
// are none.
func refusal(p *profile.Profile, problems []string, info driverinfo.Info) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("driver profile %s does not say what its driver says of itself:\n  %s\n(the driver reports: %s)",
		label(p), strings.Join(problems, "\n  "), info)
}

// checkBlock refuses profile p if it declares raw block volumes
// (capabilities.block: true) and its driver, started in cluster c, does
// not make one when asked (driverinfo.TryBlock) with the class's block
// parameters, for the first node's topology if it reports topology. CSI
// has no capability for block: trying one is the only way to ask. A
// class whose CreateVolume needs a secret is not tried.
func checkBlock(ctx context.Context, c *cluster.Cluster, p *profile.Profile, info driverinfo.Info) error {
	params := p.StorageClass.BlockParameters
	if params == nil {
		params = p.StorageClass.Parameters
	}
	if !p.Capabilities[profile.Block] || !info.HasControllerService() || driverinfo.NeedsSecrets(params) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, blockTrialTimeout)
	defer cancel()
	conn, err := csiclient.Dial(c.ControllerEndpoint(), "csisim", nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	trial := driverinfo.BlockTrial{Parameters: params}
	if info.Plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] && info.NodeInfo != nil {
		trial.Topology = info.NodeInfo.Topology
	}
	if err := driverinfo.TryBlock(ctx, conn.Controller, trial); err != nil {
		return refusal(p, []string{fmt.Sprintf("capabilities.%s: the profile says true, but %s does not make raw block volumes: %v",
			profile.Block, info.Name, err)}, info)
	}
	return nil
}

// blockTrialTimeout bounds checkBlock's CreateVolume and DeleteVolume:
// the external-provisioner's default --timeout is 10 s a call.
const blockTrialTimeout = 20 * time.Second
