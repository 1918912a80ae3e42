package csiutil

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The mutable parameters csisim's drivers accept, in CreateVolume's and
// ControllerModifyVolume's mutable_parameters (what a
// VolumeAttributesClass's parameters become): the performance a volume is
// provisioned with, as a cloud disk's iops and throughput. Both are
// positive integers; they are recorded, not enforced.
const (
	MutableParameterIOPS       = "iops"
	MutableParameterThroughput = "throughput"
)

// CheckMutableParameters refuses what the drivers cannot apply: a key they
// do not know (so that a VolumeAttributesClass of another driver, or a
// misspelt key, shows as the claim's Infeasible modify) or a value that is
// not a positive integer. The message names the key and what is accepted;
// the caller makes it an InvalidArgument.
func CheckMutableParameters(params map[string]string) error {
	known := []string{MutableParameterIOPS, MutableParameterThroughput}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !slices.Contains(known, k) {
			return fmt.Errorf("mutable parameter %q is not supported (supported: %s)", k, strings.Join(known, ", "))
		}
		if n, err := strconv.ParseInt(params[k], 10, 64); err != nil || n <= 0 {
			return fmt.Errorf("mutable parameter %s=%q: want a positive integer", k, params[k])
		}
	}
	return nil
}
