// Package fidelity holds the tests that measure csisim against the real
// Kubernetes components: the upstream CSI sidecars driving csisim's API
// server and driver, and (with realkube) the same scenario on a real control
// plane. They need the real binaries that `make realkube-bins` builds into
// the cache (see realkube/README.md); without them the tests skip, unless
// CSISIM_REALKUBE=required, as in `make fidelity` and CI.
package fidelity
