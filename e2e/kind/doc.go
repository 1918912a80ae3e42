// Package kind is the kind backend of the e2e suites: run.sh makes a kind
// cluster (cluster.yaml), deploys csisim's driver from deploy/ and runs
// `go test -tags e2e ./e2e/...` against it; kind.mk wraps it as
// `make e2e-kind`; faults/ maps scenario fault names to actions on such a
// cluster. See README.md.
//
// The package's tests check what can be checked without Docker: the
// cluster config, the scripts (bash -n, shellcheck, and run.sh end to end
// against fake docker, kind, kubectl, curl and go), and — with build tag
// e2e, on a cluster run.sh made — that the driver registered on every
// node with the node's zone.
package kind
