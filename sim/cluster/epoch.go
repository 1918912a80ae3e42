package cluster

import "time"

// virtualEpoch is when the virtual clock of every simulated (not realtime)
// run starts.
var virtualEpoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
