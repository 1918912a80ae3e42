#!/usr/bin/env bash
# e2e/kind/run.sh — the e2e suites on a throwaway kind cluster.
#
#   e2e/kind/run.sh [full]     make e2e-kind: the whole scenario library, the
#                              registration and fault tests, the seed sweep as
#                              an Indexed Job of 4 completions; the figures go
#                              to docs/kind.md
#   e2e/kind/run.sh smoke      make e2e-kind-smoke: cluster, driver, E2E_KIND_SMOKE
#                              library specs, the Indexed Job of 2 completions
#   e2e/kind/run.sh clean      delete a cluster that a killed own-daemon run
#                              left in the cache's data root
#
# Two ways to have Docker (E2E_KIND_MODE, default auto: user when a Docker
# daemon answers, else own):
#   user  the user's Docker and network: kind's published node image, the
#         sidecars pulled from registry.k8s.io, the driver image built
#         from deploy/Dockerfile (the run needs docker, kind, kubectl, go);
#   own   no daemon answers and no registry can be reached (these
#         machines): as root, a Docker daemon of the run's own on the cache
#         that make e2e-kind-prepare fills (node image, images, kind,
#         kubectl), a registry of its own on the kind network's gateway
#         serving busybox to the nodes, the driver deployed with the
#         built-here variant (deploy/README.md); the daemon, its network,
#         rules and bridges, the sysctls the nodes' kubelets change, mounts
#         and loop devices are put back as they were and checked
#         (e2e/kind/footprint).
#
# Then: the cluster (cluster.yaml: a control-plane node and two workers,
# in no zone, sharing one storage directory of the host), the
# driver image loaded into it, the snapshot CRDs and snapshot-controller
# from the external-snapshotter module source (Go module proxy), the
# driver from deploy/kubernetes, the server-side dry run of deploy/, `go
# test -tags e2e` of ./e2e/... and the seed sweep. On exit — success,
# failure, Ctrl-C — logs are collected if something failed and everything
# is deleted.
#
# Exits 2 at once, touching nothing, when something it needs is missing or
# in use (Docker and no way to have it, the cache not prepared, the
# subnet, a port, a cluster of the same name); 1 when a step or a test
# fails or the machine was left changed; 0 when everything passed.
#
# Environment:
#   KIND_CLUSTER_NAME    cluster name (default csisim-e2e)
#   E2E_KIND_MODE        auto, user or own (see above)
#   E2E_KIND_SMOKE       the library specs of a smoke run, space-separated
#   KIND_SUBNET, KIND_GATEWAY, KIND_REGISTRY_PORT, KIND_API_PORT
#                        own mode: the kind network (default 10.213.0.0/24,
#                        gateway .1), the registry's port on the gateway
#                        (5310), the API server's on 127.0.0.1 (6445)
#   KIND_NODE_IMAGE      user mode: node image (default: the kind release's)
#   ARTIFACTS            where logs go on failure (default: a new directory
#                        below $TMPDIR, kept only on failure)
#   KEEP_CLUSTER=1       keep the cluster (and, in own mode, the daemon) for
#                        debugging; run.sh clean removes them afterwards
#   E2E_GO_TEST_FLAGS    extra `go test` flags for the library suite
#   E2E_KIND_FIGURES     where a full run writes its figures (default
#                        docs/kind.md)
#   ROLLOUT_TIMEOUT      how long to wait for each rollout (default 5m)
#   DOCKER, KIND, KUBECTL, GO   the commands to use (user mode)
set -Eeuo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
# shellcheck source=e2e/kind/lib.sh
. "$here/lib.sh"
# shellcheck source=e2e/kind/steps.sh
. "$here/steps.sh"

SUITE=${1:-full}
case $SUITE in
full | smoke | clean) ;;
*)
	printf 'usage: %s [full|smoke|clean]\n' "$0" >&2
	exit 2
	;;
esac

CLUSTER=${KIND_CLUSTER_NAME:-csisim-e2e}
MODE=${E2E_KIND_MODE:-auto}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}
ROLLOUT_TIMEOUT=${ROLLOUT_TIMEOUT:-5m}
KIND_API_PORT=${KIND_API_PORT:-6445}
GO=${GO:-go}
# Must match deploy.Image and the manifests (deploy's tests check those).
IMAGE=csisim:e2e
# Must match realnodes.WorkloadImage (kind_test.go checks it).
WORKLOAD_IMAGE=csisim.local/workload:v1
NAMESPACE=csisim
# The smoke run's library specs: ten that mount real volumes into real
# containers, one with a node lost and a force detach.
E2E_KIND_SMOKE=${E2E_KIND_SMOKE:-basic-lifecycle deployment-rwo-recreate kubelet-block-volume kubelet-restart expansion-online snapshot-and-restore statefulset-claims-and-scaling readwritemany-two-nodes generic-ephemeral node-loss-out-of-service}

die() {
	printf 'e2e-kind: error: %s\n' "$*" >&2
	exit 1
}
missing() {
	printf 'e2e-kind: error: %s\n' "$*" >&2
	exit 2
}
log() { kind_log "$@"; }

# take_host_lock: one run at a time changes this machine's kernel settings
# and kubelet paths — the kind nodes' kubelets set the sysctls real nodes'
# do — so an own-daemon run takes the lock real-node runs take
# (realnodes/hostlock.go), waiting while another run holds it. Fd 9 keeps
# it to the end of the run (the daemon it starts inherits it, and holds the
# host as long as it lives).
#
# The lock file goes when the run lets go of it (release_host_lock), so a
# lock taken on a file that is no longer the one at the path (opened before
# its holder removed it) is no lock: it is tried again.
# E2E_KIND_HOST_LOCK_DIR is for run.sh's own tests, whose runs with fake
# tools must neither wait for a real run's lock (they hung for the whole
# of a real run's e2e/kind step, which runs them) nor take it from one.
HOST_LOCK_DIR=${E2E_KIND_HOST_LOCK_DIR:-/run/csisim-real-nodes}
take_host_lock() {
	local said=0
	while :; do
		mkdir -p "$HOST_LOCK_DIR"
		exec 9<>"$HOST_LOCK_DIR/lock"
		if ! flock -n 9; then
			[ "$said" = 1 ] || log "waiting for the host: another run with real nodes holds it ($(cat "$HOST_LOCK_DIR/lock" 2>/dev/null))"
			said=1
			flock 9
		fi
		if [ "$(stat -L -c %d:%i /proc/$$/fd/9)" = "$(stat -c %d:%i "$HOST_LOCK_DIR/lock" 2>/dev/null)" ]; then
			break
		fi
		exec 9>&-
	done
	printf 'pid %d, kind run %s\n' $$ "$workdir" >"$HOST_LOCK_DIR/lock"
	host_locked=1
}

# release_host_lock removes the lock file (and its directory when empty)
# while it still holds it, then lets go: nothing of the run's stays.
release_host_lock() {
	[ "${host_locked:-0}" = 1 ] || return 0
	rm -f "$HOST_LOCK_DIR/lock"
	rmdir "$HOST_LOCK_DIR" 2>/dev/null || true
	exec 9>&-
	host_locked=0
}

choose_mode
check_prerequisites
if [ "$SUITE" = clean ]; then
	clean_leftovers
	exit 0
fi
check_free

workdir=$(mktemp -d "${TMPDIR:-/tmp}/csisim-kind.XXXXXX")
kubeconfig=$workdir/kubeconfig
storage=$workdir/storage
mkdir -p "$storage"
if [ -n "${ARTIFACTS:-}" ]; then
	artifacts=$ARTIFACTS
	own_artifacts=0
else
	artifacts=$(mktemp -d "${TMPDIR:-/tmp}/csisim-kind-artifacts.XXXXXX")
	own_artifacts=1
fi
mkdir -p "$artifacts"
created=0
started=$SECONDS
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$MODE" = own ]; then
	take_host_lock
	"$GO" -C "$root" run ./e2e/kind/footprint save "$workdir/footprint.json" --owned "$workdir" --owned "$KIND_CACHE"
	own_dockerd_start "$workdir" || die "the Docker daemon did not start; its log: $workdir/dockerd.log"
	create_network
	start_registry
fi
create_cluster
load_driver_image
load_workload_image
install_snapshot_addon
deploy_driver
run_tests
run_seed_sweep
log "all passed in $((SECONDS - started)) s"
