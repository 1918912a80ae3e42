package clusterprofile

import (
	"fmt"
	"strings"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/profile"
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
		if len(problems) == 0 {
			return nil
		}
		return fmt.Errorf("driver profile %s does not say what its driver says of itself:\n  %s\n(the driver reports: %s)",
			label(p), strings.Join(problems, "\n  "), info)
	}
}
