#!/usr/bin/env bash
# e2e/kind/run.sh — run the e2e suites on a throwaway kind cluster.
#
#   e2e/kind/run.sh            (or: make e2e-kind)
#
# 1. creates a kind cluster from e2e/kind/cluster.yaml (a control-plane node
#    and two workers in zones zone-a and zone-b, all mounting one fresh
#    directory of the Docker host at /var/lib/csisim),
# 2. builds the driver image from deploy/Dockerfile and loads it into the
#    nodes,
# 3. installs the snapshot CRDs and the snapshot-controller from the
#    external-snapshotter release $SNAPSHOTTER_VERSION (downloaded now,
#    never stored in the repository),
# 4. applies deploy/kubernetes/ and waits for the driver pods to be Ready,
# 5. runs `go test -tags e2e ./e2e/... -args -kubeconfig=...` and the
#    server-side dry run of deploy/'s manifests against the cluster,
# 6. deletes the cluster on exit: after success, failure or interruption.
#    On failure, logs go to $ARTIFACTS first.
#
# Needs docker (with a reachable daemon), kind, kubectl, go and curl; exits
# 2 at once, naming what is missing, when one is not there. Exits 1 when a
# step or a test fails, 0 when everything passed.
#
# Environment:
#   KIND_CLUSTER_NAME    cluster name (default csisim-e2e); an existing
#                        cluster of that name is never touched: the run
#                        stops instead
#   KIND_NODE_IMAGE      node image (default: the kind release's own)
#   SNAPSHOTTER_VERSION  external-snapshotter release (default v8.7.0)
#   ARTIFACTS            where logs go on failure (default: a new directory
#                        below $TMPDIR, kept only on failure)
#   KEEP_CLUSTER=1       keep the cluster (and its kubeconfig) for debugging
#   E2E_GO_TEST_FLAGS    extra `go test` flags, e.g. "-v -run TestE2E"
#   ROLLOUT_TIMEOUT      how long to wait for each rollout (default 5m)
#   DOCKER, KIND, KUBECTL, GO, CURL   the commands to use
set -Eeuo pipefail

die() {
	printf 'e2e-kind: error: %s\n' "$*" >&2
	exit 1
}
missing() {
	printf 'e2e-kind: error: %s\n' "$*" >&2
	exit 2
}

DOCKER=${DOCKER:-docker}
KIND=${KIND:-kind}
KUBECTL=${KUBECTL:-kubectl}
GO=${GO:-go}
CURL=${CURL:-curl}

# Prerequisites first, with shell builtins only, so that the message is
# clear whatever else is missing.
command -v "$DOCKER" >/dev/null 2>&1 ||
	missing "docker not found (DOCKER=$DOCKER): the kind backend runs its nodes as Docker containers; install Docker (https://docs.docker.com/engine/install/)"
command -v "$KIND" >/dev/null 2>&1 ||
	missing "kind not found (KIND=$KIND): install it with 'go install sigs.k8s.io/kind@v0.33.0' and make sure \$(go env GOPATH)/bin is in PATH"
command -v "$KUBECTL" >/dev/null 2>&1 ||
	missing "kubectl not found (KUBECTL=$KUBECTL): install it (https://kubernetes.io/docs/tasks/tools/)"
command -v "$GO" >/dev/null 2>&1 ||
	missing "go not found (GO=$GO)"
command -v "$CURL" >/dev/null 2>&1 ||
	missing "curl not found (CURL=$CURL): needed to download the snapshot CRDs and snapshot-controller"
"$DOCKER" info >/dev/null 2>&1 ||
	missing "docker is installed but '$DOCKER info' fails: no Docker daemon reachable (is it running? is DOCKER_HOST right? may this user use its socket?)"

CLUSTER=${KIND_CLUSTER_NAME:-csisim-e2e}
NODE_IMAGE=${KIND_NODE_IMAGE:-}
SNAPSHOTTER_VERSION=${SNAPSHOTTER_VERSION:-v8.7.0}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}
ROLLOUT_TIMEOUT=${ROLLOUT_TIMEOUT:-5m}
# Must match deploy.Image and the manifests (deploy's tests check those).
IMAGE=csisim:e2e
NAMESPACE=csisim

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)

log() {
	printf '%s e2e-kind: %s\n' "$(date +%H:%M:%S)" "$*" >&2
}
k() {
	"$KUBECTL" --kubeconfig "$kubeconfig" "$@"
}

if "$KIND" get clusters 2>/dev/null | grep -qx -- "$CLUSTER"; then
	die "a kind cluster named $CLUSTER exists already; this run would delete it at the end, so it stops here. Delete it ('$KIND delete cluster --name $CLUSTER') or pick another name with KIND_CLUSTER_NAME"
fi

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

# collect_logs saves what explains a failure: cluster state, the driver's
# logs (also of crashed containers) and kind's node logs.
collect_logs() {
	log "collecting logs into $artifacts"
	k get nodes -o wide >"$artifacts/nodes.txt" 2>&1
	k get pods -A -o wide >"$artifacts/pods.txt" 2>&1
	k get pv,pvc,volumeattachments,csinodes,storageclasses,csidrivers -A -o wide >"$artifacts/storage.txt" 2>&1
	k get events -A --sort-by=.lastTimestamp >"$artifacts/events.txt" 2>&1
	k -n "$NAMESPACE" describe pods >"$artifacts/csisim-pods-describe.txt" 2>&1
	local pod
	for pod in $(k -n "$NAMESPACE" get pods -o name 2>/dev/null); do
		k -n "$NAMESPACE" logs "$pod" --all-containers --prefix >"$artifacts/logs-${pod#pod/}.txt" 2>&1
		k -n "$NAMESPACE" logs "$pod" --all-containers --prefix --previous >"$artifacts/logs-${pod#pod/}-previous.txt" 2>&1
	done
	"$KIND" export logs "$artifacts/kind" --name "$CLUSTER" >/dev/null 2>&1
}

# release_storage empties the shared storage directory from inside a node:
# the driver wrote it as root, which this user may not be able to undo, and
# detaches loop devices still backed by block volumes there (they belong to
# the host's kernel and would outlive the cluster).
release_storage() {
	"$DOCKER" exec -i "$CLUSTER-control-plane" sh -s <<-'EOF' >/dev/null 2>&1
		for img in /var/lib/csisim/root/volumes/*.img; do
			[ -e "$img" ] || continue
			for dev in $(losetup --list --noheadings --output NAME --associated "$img"); do
				losetup --detach "$dev"
			done
		done
		rm -rf /var/lib/csisim/root /var/lib/csisim/state
	EOF
}

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if [ "$created" = 1 ]; then
		if [ "$rc" -ne 0 ]; then
			collect_logs
		fi
		if [ "$KEEP_CLUSTER" = 1 ]; then
			log "KEEP_CLUSTER=1: cluster $CLUSTER stays; kubeconfig: $kubeconfig; delete it with: $KIND delete cluster --name $CLUSTER"
		else
			release_storage || log "warning: could not empty $storage from inside the cluster"
			log "deleting kind cluster $CLUSTER"
			"$KIND" delete cluster --name "$CLUSTER" || log "warning: could not delete kind cluster $CLUSTER"
		fi
	fi
	if [ "$KEEP_CLUSTER" != 1 ]; then
		rm -rf "$workdir" 2>/dev/null || log "warning: could not remove $workdir"
	fi
	if [ "$rc" -ne 0 ]; then
		log "FAILED (exit $rc); logs: $artifacts"
	elif [ "$own_artifacts" = 1 ]; then
		rm -rf "$artifacts"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. cluster
log "creating kind cluster $CLUSTER (storage shared by all nodes: $storage)"
sed "s|__CSISIM_STORAGE__|$storage|g" "$here/cluster.yaml" >"$workdir/cluster.yaml"
create=(create cluster --name "$CLUSTER" --config "$workdir/cluster.yaml" --kubeconfig "$kubeconfig" --wait 3m)
if [ -n "$NODE_IMAGE" ]; then
	create+=(--image "$NODE_IMAGE")
fi
created=1
"$KIND" "${create[@]}"

# 2. driver image
log "building $IMAGE"
DOCKER_BUILDKIT=1 "$DOCKER" build -f "$root/deploy/Dockerfile" -t "$IMAGE" "$root"
"$KIND" load docker-image "$IMAGE" --name "$CLUSTER"

# 3. snapshot add-on: CRDs (also the group snapshot ones, which the
# snapshot-controller watches by default) and the snapshot-controller.
log "installing the snapshot CRDs and snapshot-controller $SNAPSHOTTER_VERSION"
snap=$workdir/external-snapshotter
mkdir -p "$snap/crd" "$snap/controller"
upstream=https://raw.githubusercontent.com/kubernetes-csi/external-snapshotter/$SNAPSHOTTER_VERSION
crds=(
	snapshot.storage.k8s.io_volumesnapshotclasses
	snapshot.storage.k8s.io_volumesnapshotcontents
	snapshot.storage.k8s.io_volumesnapshots
	groupsnapshot.storage.k8s.io_volumegroupsnapshotclasses
	groupsnapshot.storage.k8s.io_volumegroupsnapshotcontents
	groupsnapshot.storage.k8s.io_volumegroupsnapshots
)
for crd in "${crds[@]}"; do
	"$CURL" -fsSL --retry 3 -o "$snap/crd/$crd.yaml" "$upstream/client/config/crd/$crd.yaml"
done
for f in rbac-snapshot-controller setup-snapshot-controller; do
	"$CURL" -fsSL --retry 3 -o "$snap/controller/$f.yaml" "$upstream/deploy/kubernetes/snapshot-controller/$f.yaml"
done
k apply -f "$snap/crd/"
for crd in "${crds[@]}"; do
	# file name group_plural -> CRD name plural.group
	k wait --for=condition=Established --timeout=60s "crd/${crd#*_}.${crd%%_*}"
done
k apply -f "$snap/controller/"
# The release's manifest may name an older image; run the pinned one.
k -n kube-system set image deployment/snapshot-controller \
	"snapshot-controller=registry.k8s.io/sig-storage/snapshot-controller:$SNAPSHOTTER_VERSION"
k -n kube-system rollout status deployment/snapshot-controller --timeout="$ROLLOUT_TIMEOUT"

# 4. the driver
log "deploying csisim's driver"
k apply -f "$root/deploy/kubernetes/"
k -n "$NAMESPACE" rollout status daemonset/csisim-node --timeout="$ROLLOUT_TIMEOUT"
k -n "$NAMESPACE" rollout status deployment/csisim-controller --timeout="$ROLLOUT_TIMEOUT"
k -n "$NAMESPACE" wait --for=condition=Ready pod -l app.kubernetes.io/part-of=csisim --timeout="$ROLLOUT_TIMEOUT"

# 5. tests
extra=()
if [ -n "${E2E_GO_TEST_FLAGS:-}" ]; then
	read -r -a extra <<<"$E2E_GO_TEST_FLAGS"
fi
log "server-side dry run of deploy/ against the cluster"
(cd "$root" && CSISIM_REALKUBE_KUBECONFIG="$kubeconfig" "$GO" test -count=1 -run 'TestServerSideDryRun' ./deploy/)
log "running go test -tags e2e ./e2e/..."
# -p 1: the packages share one cluster, and the fault tests disturb it.
(cd "$root" && CSISIM_KIND_CLUSTER="$CLUSTER" "$GO" test -count=1 -p 1 -timeout 60m -tags e2e "${extra[@]}" ./e2e/... -args -kubeconfig="$kubeconfig") 2>&1 |
	tee "$artifacts/go-test.txt"
log "all passed"
