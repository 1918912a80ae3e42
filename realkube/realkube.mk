# realkube/realkube.mk — targets for the real-control-plane backend.
# Included by the top-level Makefile (include realkube/realkube.mk).
#
#   make realkube-bins                       all nine binaries (~35 min cold on 2 cores)
#   make realkube-bins REALKUBE_ONLY=control-plane
#   make realkube-bins REALKUBE_ONLY=etcd,kube-apiserver
#   make realkube-list                       what is built, what is missing
#   make realkube-test                       the realkube tests; fail (not skip) without binaries
#
# Binaries go to $${CSISIM_CACHE:-$$HOME/.cache/csisim}/realkube/v1.37.2/bin,
# never into the repository.

GO ?= go
REALKUBE_ONLY ?=
REALKUBE_BUILD_FLAGS ?=

.PHONY: realkube-bins realkube-list realkube-test

realkube-bins:
	$(GO) run ./realkube/build $(if $(REALKUBE_ONLY),--only $(REALKUBE_ONLY)) $(REALKUBE_BUILD_FLAGS)

realkube-list:
	@$(GO) run ./realkube/build --list

realkube-test:
	CSISIM_REALKUBE=required $(GO) test -count=1 -v ./realkube/
