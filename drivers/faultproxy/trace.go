package faultproxy

import "github.com/csisim/csisim/trace"

// Trace is the call's structured data for a timeline entry (trace.Entry's
// Call), which the invariant checker reads.
func (c Call) Trace() *trace.CSICall {
	return &trace.CSICall{NodeID: c.NodeID, Volume: c.VolumeID, Name: c.Name, Snapshot: c.SnapshotID, StagingPath: c.StagingPath, TargetPath: c.TargetPath,
		AccessMode: c.AccessMode, Block: c.Block, ReadOnly: c.ReadOnly, MountFlags: c.MountFlags, Ephemeral: c.Ephemeral, Code: c.Code, Capabilities: c.Capabilities}
}
