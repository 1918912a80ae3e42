# e2e/kind/kind.mk — the kind backend. Included by the top-level Makefile
# (include e2e/kind/kind.mk).
#
#   make e2e-kind          kind cluster, driver image, deploy/kubernetes,
#                          then `go test -tags e2e ./e2e/...` on it; the
#                          cluster is deleted afterwards (also on failure).
#                          Needs docker, kind, kubectl, go and curl; see
#                          e2e/kind/run.sh for the knobs (KIND_CLUSTER_NAME,
#                          KEEP_CLUSTER=1, ARTIFACTS, E2E_GO_TEST_FLAGS, ...).
#   make e2e-kind-prepare  fill the cache an own-daemon run needs (as root, no
#                          registry: Debian packages, the Go binaries, root
#                          file systems, images, the node image); see
#                          e2e/kind/prepare.sh
#   make e2e-kind-smoke    cluster, driver, E2E_KIND_SMOKE library specs, the
#                          Indexed Job of 2 completions (run.sh smoke)
#   make e2e-kind-ci       the smoke with E2E_KIND_CI's specs, sized for CI's
#                          budget (about 16 minutes here); .ci/run's kind
#                          stage, when the cache is prepared
#   make e2e-kind-lint     bash -n and shellcheck on the scripts (shellcheck
#                          must be installed: apt-get install shellcheck)
#   make e2e-kind-check    what can be checked without Docker: the manifest,
#                          fault-plan and script tests

GO ?= go
SHELLCHECK ?= shellcheck
# The scripts run, and those they source: shellcheck reports only on the
# files it is given, so the sourced ones are checked on their own, their
# variables (set by the sourcing script) not taken for unset or unused.
E2E_KIND_SCRIPTS := e2e/kind/run.sh e2e/kind/prepare.sh e2e/kind/runc-no-sys-resource.sh
E2E_KIND_SOURCED := e2e/kind/lib.sh e2e/kind/steps.sh

.PHONY: e2e-kind e2e-kind-prepare e2e-kind-smoke e2e-kind-ci e2e-kind-lint e2e-kind-check

# CI's kind specs: eleven that passed in the first full run here, and four
# that pass since the run's namespace and nodes are mapped (2026-12-07), most
# of them mounting real volumes into real containers (the node-loss spec
# alone waits minutes for the eviction; make e2e-kind-smoke runs it).
E2E_KIND_CI ?= basic-lifecycle deployment-rwo-recreate deployment-rwo-rolling-update expansion-block \
	expansion-controller-only expansion-node-pending generic-ephemeral kubelet-token-requests modify-online \
	csidriver-name-mismatch kubelet-missing-driver kubelet-claim-not-found inline-ephemeral-allowed \
	kubelet-pod-info-and-fsgroup kubelet-subpath

e2e-kind:
	GO="$(GO)" e2e/kind/run.sh full

e2e-kind-prepare:
	GO="$(GO)" e2e/kind/prepare.sh

e2e-kind-smoke:
	GO="$(GO)" e2e/kind/run.sh smoke

e2e-kind-ci:
	GO="$(GO)" E2E_KIND_SMOKE="$(E2E_KIND_CI)" e2e/kind/run.sh smoke

e2e-kind-lint:
	@for s in $(E2E_KIND_SCRIPTS) $(E2E_KIND_SOURCED); do bash -n "$$s" || exit 1; done
	$(SHELLCHECK) -x $(E2E_KIND_SCRIPTS)
	$(SHELLCHECK) -x -s bash -e SC2034,SC2154 $(E2E_KIND_SOURCED)

e2e-kind-check:
	CSISIM_REQUIRE_SHELLCHECK=1 $(GO) test -count=1 ./deploy/... ./e2e/kind/...
	$(GO) vet -tags e2e ./e2e/... ./deploy/...
