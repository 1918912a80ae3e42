package deploy

import (
	"maps"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
)

// DeployedProfileName is how skip reasons name DeployedProfile.
const DeployedProfileName = "deployed-csisim"

// DeployedProfile is csisim's driver as deploy/kubernetes runs it, for
// scenarios run on a cluster it is deployed to (make e2e, make e2e-kind):
// started once, with one set of flags, for every scenario. Everything the
// default profile (drivers/profiles/csisim.yaml) could start the driver
// with for a scenario is taken out — MULTI_NODE access (the deployment has
// no --multi-node), a capacity, a volume limit, a named flag set that adds
// flags, cluster.driverArgs and cluster.driverName — so a scenario that
// asks for one of them is skipped, naming it, where it would otherwise fail
// waiting for what the deployed driver never does. The zone flag stays:
// the node DaemonSet passes each node's zone.
func DeployedProfile() *profile.Profile {
	p := *profiles.MustDefault()
	p.File = DeployedProfileName
	p.Start = profile.Start{} // not started by the run
	p.Capabilities = maps.Clone(p.Capabilities)
	delete(p.Capabilities, profile.MultiNode)
	extra := map[string][]string{}
	for name, args := range p.Flags.Extra {
		if len(args) == 0 { // a name for what the driver does anyway
			extra[name] = args
		}
	}
	p.Flags = profile.Flags{Zone: p.Flags.Zone, Extra: extra}
	p.NotSupported = maps.Clone(p.NotSupported)
	if p.NotSupported == nil {
		p.NotSupported = map[string]string{}
	}
	for name, why := range deployedNotSupported {
		p.NotSupported[name] = why
	}
	return &p
}

// deployedNotSupported are the library scenarios that need what
// deploy/kubernetes does not give the driver, and why.
var deployedNotSupported = map[string]string{
	// The controller's ServiceAccount may not read Secrets
	// (20-rbac-controller.yaml; upstream external-provisioner's
	// deploy/kubernetes/rbac.yaml leaves that rule commented out too):
	// the provisioner secret of the scenario's class is "forbidden", not
	// "not found" and then found.
	"provisioning-secrets-and-clones": "deploy/kubernetes grants the controller's ServiceAccount no access to Secrets " +
		"(20-rbac-controller.yaml), so the external-provisioner cannot read the class's provisioner secret",
}
