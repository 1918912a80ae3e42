package provisioner

import (
	"fmt"
	"strings"
)

// The StorageClass parameters under csi.storage.k8s.io/ are the
// sidecar's, never the driver's. The sidecar knows these and fails to
// provision with any other key under the prefix, so that a misspelt
// secret key is not silently sent to the driver.
var knownSidecarParameters = map[string]bool{csiParameterPrefix + "fstype": true}

func init() {
	for _, kind := range []string{provisionerSecret, controllerPublishSecret, nodeStageSecret, nodePublishSecret,
		controllerExpandSecret, nodeExpandSecret, controllerModifySecret} {
		knownSidecarParameters[secretNameKey(kind)] = true
		knownSidecarParameters[secretNamespaceKey(kind)] = true
	}
	// The default secret, for every kind the class names none of.
	knownSidecarParameters[csiParameterPrefix+"secret-name"] = true
	knownSidecarParameters[csiParameterPrefix+"secret-namespace"] = true
}

// driverParameters are the class's parameters for CreateVolume: all but
// the csi.storage.k8s.io/ keys. A key under the prefix the sidecar does
// not know is an error, in the sidecar's words.
func driverParameters(params map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range params {
		if !isSidecarParameter(k) {
			out[k] = v
			continue
		}
		if !knownSidecarParameters[k] {
			return nil, fmt.Errorf("failed to strip CSI Parameters of prefixed keys: found unknown parameter key %q with reserved namespace %s",
				k, csiParameterPrefix)
		}
	}
	return out, nil
}

// fsTypeOf is the file system type the class asks for: the
// csi.storage.k8s.io/fstype parameter, or the deprecated fstype (in any
// case), but not both. Without either, the sidecar's --default-fstype
// (Config.DefaultFSType; empty by default: no type asked for).
func fsTypeOf(params map[string]string) (string, error) {
	fsType, found := "", 0
	for k, v := range params {
		if strings.ToLower(k) == "fstype" || k == csiParameterPrefix+"fstype" {
			fsType = v
			found++
		}
	}
	if found > 1 {
		return "", fmt.Errorf("fstype specified in parameters with both \"fstype\" and \"%sfstype\" keys", csiParameterPrefix)
	}
	return fsType, nil
}
