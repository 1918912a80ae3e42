# e2e/kind/kind.mk — the kind backend. Included by the top-level Makefile
# (include e2e/kind/kind.mk).
#
#   make e2e-kind          kind cluster, driver image, deploy/kubernetes,
#                          then `go test -tags e2e ./e2e/...` on it; the
#                          cluster is deleted afterwards (also on failure).
#                          Needs docker, kind, kubectl, go and curl; see
#                          e2e/kind/run.sh for the knobs (KIND_CLUSTER_NAME,
#                          KEEP_CLUSTER=1, ARTIFACTS, E2E_GO_TEST_FLAGS, ...).
#   make e2e-kind-lint     bash -n and shellcheck on the scripts (shellcheck
#                          must be installed: apt-get install shellcheck)
#   make e2e-kind-check    what can be checked without Docker: the manifest,
#                          fault-plan and script tests

GO ?= go
SHELLCHECK ?= shellcheck
E2E_KIND_SCRIPTS := e2e/kind/run.sh

.PHONY: e2e-kind e2e-kind-lint e2e-kind-check

e2e-kind:
	GO="$(GO)" e2e/kind/run.sh

e2e-kind-lint:
	@for s in $(E2E_KIND_SCRIPTS); do bash -n "$$s" || exit 1; done
	$(SHELLCHECK) $(E2E_KIND_SCRIPTS)

e2e-kind-check:
	CSISIM_REQUIRE_SHELLCHECK=1 $(GO) test -count=1 ./deploy/... ./e2e/kind/...
	$(GO) vet -tags e2e ./e2e/... ./deploy/...
