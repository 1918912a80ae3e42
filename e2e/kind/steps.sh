# e2e/kind/steps.sh — the steps of run.sh (sourced by it, not run). They
# use run.sh's variables: MODE, SUITE, CLUSTER, workdir, kubeconfig,
# storage, artifacts, ...

k() {
	"$KUBECTL" --kubeconfig "$kubeconfig" "$@"
}

# choose_mode settles MODE (auto: user when a Docker daemon answers, else
# own) and the commands of that mode.
choose_mode() {
	DOCKER=${DOCKER:-docker}
	if [ "$MODE" = auto ]; then
		if command -v "$DOCKER" >/dev/null 2>&1 && "$DOCKER" info >/dev/null 2>&1; then
			MODE=user
		else
			MODE=own
		fi
	fi
	case $MODE in
	user)
		KIND=${KIND:-kind}
		KUBECTL=${KUBECTL:-kubectl}
		;;
	own)
		DOCKER=docker
		KIND=$KIND_BIN/kind
		KUBECTL=$KIND_BIN/kubectl
		;;
	*) missing "E2E_KIND_MODE=$MODE: want auto, user or own" ;;
	esac
	log "mode: $MODE (E2E_KIND_MODE; user: the Docker daemon that answers, own: a daemon of the run's own on the prepared cache)"
}

# check_prerequisites stops the run (exit 2) when a command it needs is
# missing, before anything is touched.
check_prerequisites() {
	command -v "$GO" >/dev/null 2>&1 || missing "go not found (GO=$GO)"
	if [ "$MODE" = user ]; then
		command -v "$DOCKER" >/dev/null 2>&1 ||
			missing "docker not found (DOCKER=$DOCKER): install Docker (https://docs.docker.com/engine/install/), or, as root on a machine without one, run make e2e-kind-prepare and E2E_KIND_MODE=own"
		"$DOCKER" info >/dev/null 2>&1 ||
			missing "'$DOCKER info' fails: no Docker daemon reachable (is it running? is DOCKER_HOST right?); without one, use E2E_KIND_MODE=own (as root, after make e2e-kind-prepare)"
		command -v "$KIND" >/dev/null 2>&1 ||
			missing "kind not found (KIND=$KIND): install it with 'go install sigs.k8s.io/kind@v0.33.0' and make sure \$(go env GOPATH)/bin is in PATH"
		command -v "$KUBECTL" >/dev/null 2>&1 || missing "kubectl not found (KUBECTL=$KUBECTL): install it (https://kubernetes.io/docs/tasks/tools/)"
		return 0
	fi
	[ "$(id -u)" = 0 ] || missing "no Docker daemon answers, and a daemon of the run's own needs root: run as root, or start Docker (E2E_KIND_MODE=user)"
	command -v dockerd >/dev/null 2>&1 ||
		missing "no Docker daemon answers and dockerd is not installed: run make e2e-kind-prepare as root (it installs Debian's docker.io), or install Docker Engine"
	command -v iptables >/dev/null 2>&1 || missing "iptables not found: run make e2e-kind-prepare as root (it installs it)"
	command -v "$DOCKER" >/dev/null 2>&1 || missing "the docker command is not installed: run make e2e-kind-prepare as root"
	kind_cache_ready ||
		missing "the kind cache is not prepared ($KIND_CACHE/READY missing): run make e2e-kind-prepare (as root; about 2 hours cold on 2 cores) first"
}

# check_free stops the run (exit 2) when what it would take is taken: a
# cluster of the same name, in own mode the subnet and the ports.
check_free() {
	if [ "$MODE" = user ]; then
		if "$KIND" get clusters 2>/dev/null | grep -qx -- "$CLUSTER"; then
			missing "a kind cluster named $CLUSTER exists already; this run would delete it at the end, so it stops here. Delete it ('$KIND delete cluster --name $CLUSTER') or pick another name with KIND_CLUSTER_NAME"
		fi
		return 0
	fi
	if grep -ls "\"Name\":\"/$CLUSTER-" "$KIND_CACHE"/docker/containers/*/config.v2.json >/dev/null 2>&1; then
		missing "the own Docker daemon's data root ($KIND_CACHE/docker) holds the containers of a kind cluster named $CLUSTER, left by a run that was killed: remove them with 'e2e/kind/run.sh clean' (KIND_CLUSTER_NAME=$CLUSTER), or pick another name with KIND_CLUSTER_NAME"
	fi
	if pgrep -f -- "--config-file [^ ]*csisim-kind" >/dev/null 2>&1; then
		missing "a Docker daemon of another e2e-kind run is running (pgrep -af csisim-kind); wait for it, or stop that run"
	fi
	local prefix=${KIND_SUBNET%.0/24}
	if [ "$prefix" = "$KIND_SUBNET" ] || [ "$KIND_GATEWAY" != "$prefix.1" ]; then
		missing "KIND_SUBNET=$KIND_SUBNET, KIND_GATEWAY=$KIND_GATEWAY: want a /24 ending in .0/24 and its .1"
	fi
	local default_dev via_dev
	default_dev=$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1); exit}')
	via_dev=$(ip -4 route get "$KIND_GATEWAY" 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1); exit}')
	if ip -4 -o addr show 2>/dev/null | grep -qF " inet $prefix." || { [ -n "$via_dev" ] && [ "$via_dev" != "$default_dev" ]; }; then
		missing "the subnet $KIND_SUBNET is in use on this machine (an address or a route of it: see 'ip route get $KIND_GATEWAY'); pick another with KIND_SUBNET=a.b.c.0/24 KIND_GATEWAY=a.b.c.1"
	fi
	local port
	for port in "$KIND_API_PORT" "$KIND_REGISTRY_PORT"; do
		if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			missing "port $port is in use (ss -ltnp 'sport = :$port'): the run needs it for the kind API server (KIND_API_PORT=$KIND_API_PORT) and its registry (KIND_REGISTRY_PORT=$KIND_REGISTRY_PORT); pick others"
		fi
	done
}

# clean_leftovers removes, with a daemon of the run's own, a cluster of
# CLUSTER's name and the kind network a killed run left in the cache's data
# root (run.sh clean).
clean_leftovers() {
	local rundir rc=0
	[ "$MODE" = own ] || missing "run.sh clean is for own-daemon runs; with your Docker: $KIND delete cluster --name $CLUSTER"
	rundir=$(mktemp -d "${TMPDIR:-/tmp}/csisim-kind-clean.XXXXXX")
	own_dockerd_start "$rundir" || rc=1
	if [ "$rc" = 0 ]; then
		"$KIND" delete cluster --name "$CLUSTER" || rc=1
		docker network rm kind >/dev/null 2>&1 || true
		docker container prune -f >/dev/null 2>&1 || true
		docker volume prune -f >/dev/null 2>&1 || true
	fi
	own_dockerd_stop "$rundir"
	rm -rf "$rundir"
	return "$rc"
}

# create_network makes the kind network on the pinned subnet, with no
# masquerading (nothing leaves the machine), and notes its bridge.
create_network() {
	local id
	id=$(docker network create kind --driver bridge --subnet "$KIND_SUBNET" --gateway "$KIND_GATEWAY" \
		-o com.docker.network.bridge.enable_ip_masquerade=false \
		-o com.docker.network.driver.mtu=1500)
	echo "br-${id:0:12}" >>"$workdir/bridges"
	log "kind network $KIND_SUBNET on bridge br-${id:0:12}"
}

# start_registry serves an in-memory registry on the kind network's
# gateway, where the nodes' containerd pulls docker.io images from (the
# mirror in the cluster config), and pushes busybox to it.
start_registry() {
	"$KIND_BIN/crane" registry serve --address "$KIND_GATEWAY:$KIND_REGISTRY_PORT" >"$workdir/registry.log" 2>&1 &
	echo $! >"$workdir/registry.pid"
	local i
	for i in $(seq 1 40); do
		"$KIND_BIN/crane" catalog --insecure "$KIND_GATEWAY:$KIND_REGISTRY_PORT" >/dev/null 2>&1 && break
		sleep 0.25
	done
	"$KIND_BIN/crane" push --insecure "$KIND_CACHE/images/busybox.tar" "$KIND_GATEWAY:$KIND_REGISTRY_PORT/library/busybox:latest" >/dev/null
	log "registry on $KIND_GATEWAY:$KIND_REGISTRY_PORT serving docker.io/library/busybox:latest (Debian's busybox-static)"
}

# cluster_config writes the kind config: cluster.yaml with the storage
# directory, and in own mode what these machines need (own_cluster_config).
cluster_config() {
	sed "s|__CSISIM_STORAGE__|$storage|g" "$here/cluster.yaml" >"$workdir/cluster.yaml"
	# The kubelet of v1.35 and later refuses to start on cgroup v1 unless
	# told not to (failCgroupV1); these VMs' hosts have hybrid v1 cgroups,
	# and the nodes' kubelets see the host's.
	local cgroup_v1_patch=
	if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
		cgroup_v1_patch='  - |
    kind: KubeletConfiguration
    failCgroupV1: false'
	fi
	if [ "$MODE" != own ]; then
		[ -z "$cgroup_v1_patch" ] || printf 'kubeadmConfigPatches:\n%s\n' "$cgroup_v1_patch" >>"$workdir/cluster.yaml"
		return 0
	fi
	cat >>"$workdir/cluster.yaml" <<-EOF
		# Added by run.sh for its own Docker daemon (e2e/kind/README.md):
		networking:
		  apiServerAddress: 127.0.0.1
		  apiServerPort: $KIND_API_PORT
		  # kindnetd is not on the Go module proxy; run.sh writes a bridge
		  # CNI config on each node and the routes between their pod CIDRs.
		  disableDefaultCNI: true
		kubeadmConfigPatches:
		  - |
		    # No CoreDNS image can be had here, and no scenario needs cluster DNS.
		    kind: InitConfiguration
		    skipPhases: [preflight, addon/coredns]
		$cgroup_v1_patch
		containerdConfigPatches:
		  - |-
		    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
		      endpoint = ["http://$KIND_GATEWAY:$KIND_REGISTRY_PORT"]
	EOF
}

create_cluster() {
	log "creating kind cluster $CLUSTER (storage shared by all nodes: $storage)"
	cluster_config
	local create=(create cluster --name "$CLUSTER" --config "$workdir/cluster.yaml" --kubeconfig "$kubeconfig")
	if [ "$MODE" = own ]; then
		create+=(--image "$KIND_LOCAL_NODE_IMAGE")
	else
		create+=(--wait 3m)
		[ -n "${KIND_NODE_IMAGE:-}" ] && create+=(--image "$KIND_NODE_IMAGE")
	fi
	created=1
	"$KIND" "${create[@]}"
	if [ "$MODE" = own ]; then
		pod_network
	fi
	k wait --for=condition=Ready node --all --timeout="$ROLLOUT_TIMEOUT"
}

# pod_network is what kindnetd would do: on each node a bridge CNI config
# for the node's pod CIDR, and a route to every other node's pod CIDR
# through that node.
pod_network() {
	local nodes node cidr ip other
	nodes=$(k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
	while read -r node cidr ip; do
		[ -n "$node" ] || continue
		docker exec -i "$node" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-csisim-bridge.conflist' <<-EOF
			{
			  "cniVersion": "0.4.0",
			  "name": "csisim-kind",
			  "plugins": [
			    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
			     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
			    {"type": "portmap", "capabilities": {"portMappings": true}}
			  ]
			}
		EOF
		while read -r other ocidr oip; do
			if [ -z "$other" ] || [ "$other" = "$node" ]; then
				continue
			fi
			docker exec "$node" ip route replace "$ocidr" via "$oip"
		done <<<"$nodes"
	done <<<"$nodes"
	log "pod network: a bridge per node, routes between the nodes' pod CIDRs"
}

# load_driver_image makes csisim:e2e and loads it into the nodes: from
# deploy/Dockerfile with the user's Docker, else from a csisim built here
# on the image base of the cache (the Dockerfile's contents, offline).
load_driver_image() {
	log "building $IMAGE"
	if [ "$MODE" = user ]; then
		DOCKER_BUILDKIT=1 "$DOCKER" build -f "$root/deploy/Dockerfile" -t "$IMAGE" "$root"
		"$KIND" load docker-image "$IMAGE" --name "$CLUSTER"
		return 0
	fi
	CGO_ENABLED=0 "$GO" -C "$root" build -trimpath -ldflags="-s -w" -o "$workdir/csisim" ./cmd/csisim
	"$GO" -C "$root" run ./e2e/kind/imagegen --out "$workdir/csisim-image.tar" --tag "$IMAGE" \
		--layer "$KIND_CACHE/images/base-layer.tar" --file "/usr/local/bin/csisim=$workdir/csisim" \
		--dir "/usr/share/csisim/scenarios/library=$root/scenarios/library" --entrypoint "/usr/local/bin/csisim driver"
	"$KIND" load image-archive "$workdir/csisim-image.tar" --name "$CLUSTER"
	# The footprint check at the end counts the run's own directory too.
	rm -f "$workdir/csisim-image.tar" "$workdir/csisim"
}

# load_workload_image makes csisim's workload image, which the suite runs
# every scenario pod's containers as (realnodes.WorkloadPod: the image and
# its path there), and loads it into the nodes; in both modes, offline.
load_workload_image() {
	log "building $WORKLOAD_IMAGE, the scenario pods' containers"
	CGO_ENABLED=0 "$GO" -C "$root" build -trimpath -ldflags="-s -w" -o "$workdir/csisim-workload" ./cmd/csisim-workload
	"$GO" -C "$root" run ./e2e/kind/imagegen --out "$workdir/workload-image.tar" --tag "$WORKLOAD_IMAGE" \
		--file "/csisim-workload=$workdir/csisim-workload" --entrypoint "/csisim-workload run"
	"$KIND" load image-archive "$workdir/workload-image.tar" --name "$CLUSTER"
	rm -f "$workdir/workload-image.tar" "$workdir/csisim-workload"
}

# install_snapshot_addon: the snapshot CRDs (also the group snapshot ones,
# which the snapshot-controller watches by default) and the
# snapshot-controller, from the external-snapshotter module source of the
# release deploy.SnapshotterVersion.
install_snapshot_addon() {
	local version=v8.7.0 crds controller
	log "installing the snapshot CRDs and snapshot-controller $version (from the Go module proxy)"
	crds=$(module_dir "github.com/kubernetes-csi/external-snapshotter/client/v8@$version")/config/crd
	controller=$(module_dir "github.com/kubernetes-csi/external-snapshotter/v8@$version")/deploy/kubernetes/snapshot-controller
	local f
	for f in "$crds"/*.storage.k8s.io_*.yaml; do
		k apply -f "$f"
	done
	k wait --for=condition=Established --timeout=60s crd --all
	k apply -f "$controller/rbac-snapshot-controller.yaml" -f "$controller/setup-snapshot-controller.yaml"
	# The release's manifest may name an older image; run the pinned one.
	k -n kube-system set image deployment/snapshot-controller \
		"snapshot-controller=registry.k8s.io/sig-storage/snapshot-controller:$version"
	k -n kube-system rollout status deployment/snapshot-controller --timeout="$ROLLOUT_TIMEOUT"
}

# deploy_driver applies deploy/kubernetes, in own mode with the built-here
# variant's workloads in place of the regular ones.
deploy_driver() {
	log "deploying csisim's driver from deploy/kubernetes ($MODE mode)"
	local f variant
	for f in "$root"/deploy/kubernetes/*.yaml; do
		variant=$root/deploy/kubernetes/variants/built-here/$(basename "$f")
		if [ "$MODE" = own ] && [ -f "$variant" ]; then
			f=$variant
		fi
		k apply -f "$f"
	done
	k -n "$NAMESPACE" rollout status daemonset/csisim-node --timeout="$ROLLOUT_TIMEOUT"
	k -n "$NAMESPACE" rollout status deployment/csisim-controller --timeout="$ROLLOUT_TIMEOUT"
	k -n "$NAMESPACE" wait --for=condition=Ready pod -l app.kubernetes.io/part-of=csisim --timeout="$ROLLOUT_TIMEOUT"
	k -n "$NAMESPACE" get pods -o wide
}

# run_tests runs the server-side dry run of deploy/ and the e2e suites:
# the scenario library (./e2e/; in a smoke run the E2E_KIND_SMOKE specs),
# the registration check (./e2e/kind/) and, in a full run, the live fault
# tests (./e2e/kind/faults/).
run_tests() {
	log "server-side dry run of deploy/ against the cluster"
	(cd "$root" && CSISIM_REALKUBE_KUBECONFIG="$kubeconfig" "$GO" test -count=1 -run 'TestServerSideDryRun' ./deploy/)
	local extra=() only=()
	if [ -n "${E2E_GO_TEST_FLAGS:-}" ]; then
		read -r -a extra <<<"$E2E_GO_TEST_FLAGS"
	fi
	[ "$SUITE" = smoke ] && only=(-scenarios="$E2E_KIND_SMOKE")
	log "running the scenario library: go test -tags e2e ./e2e/"
	suite_started=$SECONDS
	local rc=0
	# Ginkgo's own suite timeout is an hour by default, shorter than the
	# whole library takes on kind (node-loss specs wait minutes each): the
	# first full run stopped at 44 of 93 specs. It gets go test's time.
	(cd "$root" && CSISIM_KIND_CLUSTER="$CLUSTER" "$GO" test -count=1 -timeout 150m -tags e2e "${extra[@]}" ./e2e/ \
		-args -ginkgo.timeout=150m -kubeconfig="$kubeconfig" -kind-report="$workdir/kind-report.md" "${only[@]}") 2>&1 | tee "$artifacts/go-test.txt" || rc=$?
	suite_wall=$((SECONDS - suite_started))
	[ "$rc" = 0 ] || die "the scenario library failed on kind (exit $rc); its output: $artifacts/go-test.txt"
	local pkgs=(./e2e/kind/)
	[ "$SUITE" = full ] && pkgs+=(./e2e/kind/faults/)
	log "running go test -tags e2e ${pkgs[*]}"
	# -p 1: the packages share one cluster, and the fault tests disturb it.
	(cd "$root" && CSISIM_KIND_CLUSTER="$CLUSTER" "$GO" test -count=1 -p 1 -timeout 30m -tags e2e "${pkgs[@]}" -args -kubeconfig="$kubeconfig") 2>&1 |
		tee -a "$artifacts/go-test.txt"
}

# sweep_job writes the Indexed Job of deploy/seed-sweep with N completions
# (and shards) over SEEDS to FILE, as job NAME; with a scenario file it
# runs that one, mounted from the config map of the same name as the job.
sweep_job() {
	local file=$1 name=$2 n=$3 seeds=$4 scenario=${5:-}
	sed -e "s/^  name: csisim-seed-sweep$/  name: $name/" -e "s/^  completions: 4$/  completions: $n/" -e "s/^  parallelism: 4$/  parallelism: $n/" \
		-e "s|--shard=\$(JOB_COMPLETION_INDEX)/4|--shard=\$(JOB_COMPLETION_INDEX)/$n|" -e "s|--seeds=1..400|--seeds=$seeds|" \
		"$root/deploy/seed-sweep/indexed-job.yaml" >"$file"
	if ! grep -q "completions: $n" "$file" || ! grep -q -- "--shard=\$(JOB_COMPLETION_INDEX)/$n" "$file" || ! grep -q -- "--seeds=$seeds" "$file"; then
		die "deploy/seed-sweep/indexed-job.yaml changed: run.sh cannot set its completions, shards and seeds"
	fi
	[ -n "$scenario" ] || return 0
	sed -i -e "s|^            - /usr/share/csisim/scenarios/library/.*\.yaml$|            - /seeded/$(basename "$scenario")|" \
		-e "s|^            - {name: tmp, mountPath: /tmp}$|&\n            - {name: seeded, mountPath: /seeded}|" \
		-e "s|^      volumes:$|&\n        - name: seeded\n          configMap: {name: $name}|" "$file"
	grep -q "/seeded/$(basename "$scenario")" "$file" || die "could not point the seeded-failure Job at its scenario"
}

# results_on_storage makes the Job in FILE, named NAME, keep its JUnit
# reports past its pods' end: the results emptyDir, which the kubelet tears
# down once a pod has finished, becomes a directory of the storage that
# kind's nodes share with this machine (cluster.yaml), writable by the
# pods' non-root user.
results_on_storage() {
	local file=$1 name=$2
	mkdir -p "$storage/seed-sweep/$name"
	chmod 0777 "$storage/seed-sweep/$name"
	sed -i -z "s|        - name: results\n          emptyDir: {}\n|        - name: results\n          hostPath: {path: /var/lib/csisim/seed-sweep/$name, type: Directory}\n|" "$file"
	grep -q "path: /var/lib/csisim/seed-sweep/$name" "$file" || die "could not put the results of Job $name on the shared storage"
}

# collect_junit copies the JUnit report of each pod of job NAME, which
# results_on_storage kept, into DIR.
collect_junit() {
	local name=$1 dir=$2 pod index
	mkdir -p "$dir"
	while read -r pod index; do
		[ -n "$pod" ] || continue
		cp "$storage/seed-sweep/$name/junit-$index.xml" "$dir/junit-$index.xml" ||
			die "no JUnit report of pod $pod (shard $index)"
	done < <(k -n "$NAMESPACE" get pods -l "batch.kubernetes.io/job-name=$name" \
		-o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{"\n"}{end}')
}

# run_seed_sweep runs the seed sweep as a real Indexed Job (4 completions;
# 2 in a smoke run), collects the shards' JUnit reports from the nodes,
# merges them and checks that together they ran every seed once; then a
# sweep with a failure seeded in one shard, whose replay command must make
# the same failure on this machine.
run_seed_sweep() {
	local n=4 seeds=1..400 dir=$artifacts/seed-sweep
	[ "$SUITE" = smoke ] && n=2 seeds=1..40
	sweep_started=$SECONDS
	log "seed sweep: Indexed Job of $n completions over seeds $seeds"
	sweep_job "$workdir/sweep.yaml" csisim-seed-sweep "$n" "$seeds"
	results_on_storage "$workdir/sweep.yaml" csisim-seed-sweep
	k apply -f "$workdir/sweep.yaml"
	k -n "$NAMESPACE" wait --for=condition=Complete --timeout=60m job/csisim-seed-sweep ||
		die "the seed sweep Job did not complete: $(k -n "$NAMESPACE" get job csisim-seed-sweep -o jsonpath='{.status}')"
	k -n "$NAMESPACE" get job csisim-seed-sweep
	collect_junit csisim-seed-sweep "$dir/sweep"
	"$GO" -C "$root" run ./e2e/kind/sweepcheck --seeds "$seeds" --out "$dir/sweep-merged.xml" "$dir"/sweep/junit-*.xml
	k -n "$NAMESPACE" delete job csisim-seed-sweep --wait=true --cascade=foreground

	log "seed sweep with a seeded failure (e2e/kind/testdata/seeded-failure.yaml fails under seed 7)"
	local scenario=$root/e2e/kind/testdata/seeded-failure.yaml
	sweep_job "$workdir/seeded.yaml" csisim-seeded-failure 2 1..10 "$scenario"
	results_on_storage "$workdir/seeded.yaml" csisim-seeded-failure
	k -n "$NAMESPACE" create configmap csisim-seeded-failure --from-file="$scenario"
	k apply -f "$workdir/seeded.yaml"
	k -n "$NAMESPACE" wait --for=condition=Failed --timeout=15m job/csisim-seeded-failure ||
		die "the seeded-failure Job did not end Failed: $(k -n "$NAMESPACE" get job csisim-seeded-failure -o jsonpath='{.status}')"
	k -n "$NAMESPACE" logs -l batch.kubernetes.io/job-name=csisim-seeded-failure --tail=-1 --prefix | grep -E 'FAIL|replay:' || true
	collect_junit csisim-seeded-failure "$dir/seeded"
	local local_csisim=$workdir/csisim-local
	"$GO" -C "$root" build -o "$local_csisim" ./cmd/csisim
	(cd "$root" && "$GO" run ./e2e/kind/sweepcheck --seeds 1..10 --expect-fail 7 --out "$dir/seeded-merged.xml" \
		--map "/seeded/$(basename "$scenario")=e2e/kind/testdata/$(basename "$scenario")" --map /usr/share/csisim/scenarios/library=scenarios/library \
		--replay "$local_csisim" "$dir"/seeded/junit-*.xml)
	# The binary is no artifact, and the footprint check would count it
	# as the run's directory growing.
	rm -f "$local_csisim"
	k -n "$NAMESPACE" delete job csisim-seeded-failure --wait=true --cascade=foreground
	k -n "$NAMESPACE" delete configmap csisim-seeded-failure
	sweep_wall=$((SECONDS - sweep_started))
}

# collect_logs saves what explains a failure: cluster state, the driver's
# logs (also of crashed containers), kind's node logs, the daemon's.
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
	cp "$workdir"/dockerd.log "$workdir"/registry.log "$artifacts/" 2>/dev/null
}

# release_storage empties the shared storage directory from inside a node:
# the driver wrote it as root, and it detaches the loop devices still
# backed by block volumes there (they belong to the host's kernel and
# would outlive the cluster).
release_storage() {
	"$DOCKER" exec -i "$CLUSTER-control-plane" sh -s <<-'EOF' >/dev/null 2>&1
		for img in /var/lib/csisim/root/volumes/*.img; do
			[ -e "$img" ] || continue
			for dev in $(losetup --list --noheadings --output NAME --associated "$img"); do
				losetup --detach "$dev"
			done
		done
		rm -rf /var/lib/csisim/root /var/lib/csisim/state /var/lib/csisim/seed-sweep
	EOF
}

# own_teardown stops what own mode started, checks that the daemon holds
# nothing of the run's, and checks the machine's footprint; it returns 1
# when something was left.
own_teardown() {
	local rc=0 left
	if [ -f "$workdir/registry.pid" ]; then
		kill "$(cat "$workdir/registry.pid")" 2>/dev/null
		wait "$(cat "$workdir/registry.pid")" 2>/dev/null
	fi
	if [ -n "${DOCKER_HOST:-}" ]; then
		docker network rm kind >/dev/null 2>&1
		left=$(docker ps -aq; docker volume ls -q)
		if [ -n "$left" ]; then
			log "error: the Docker daemon still holds containers or volumes of the run: $left"
			rc=1
		fi
	fi
	own_dockerd_stop "$workdir"
	if [ -f "$workdir/footprint.json" ]; then
		"$GO" -C "$root" run ./e2e/kind/footprint check "$workdir/footprint.json" --restore-sysctls || rc=1
	fi
	release_host_lock
	return "$rc"
}

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if [ "$created" = 1 ]; then
		[ "$rc" -ne 0 ] && collect_logs
		if [ "$KEEP_CLUSTER" = 1 ]; then
			log "KEEP_CLUSTER=1: cluster $CLUSTER stays; kubeconfig: $kubeconfig${DOCKER_HOST:+; DOCKER_HOST=$DOCKER_HOST}; remove it with: e2e/kind/run.sh clean (own mode) or $KIND delete cluster --name $CLUSTER"
		else
			release_storage || log "warning: could not empty $storage from inside the cluster"
			log "deleting kind cluster $CLUSTER"
			"$KIND" delete cluster --name "$CLUSTER" || log "warning: could not delete kind cluster $CLUSTER"
		fi
	fi
	if [ "$MODE" = own ] && [ "$KEEP_CLUSTER" != 1 ]; then
		if ! own_teardown; then
			log "error: the run left the machine changed (see above)"
			[ "$rc" = 0 ] && rc=1
		fi
	fi
	[ "$SUITE" = full ] && [ -n "${suite_wall:-}" ] && write_figures "$rc"
	if [ "$KEEP_CLUSTER" != 1 ]; then
		rm -rf "$workdir" 2>/dev/null || log "warning: could not remove $workdir"
	fi
	if [ "$rc" -ne 0 ]; then
		log "FAILED (exit $rc) after $((SECONDS - started)) s; logs: $artifacts"
	elif [ "$own_artifacts" = 1 ]; then
		rm -rf "$artifacts"
	fi
	exit "$rc"
}

# write_figures puts the run's figures into $E2E_KIND_FIGURES (default
# docs/kind.md), between the
# markers: how many library specs passed, were skipped (and why) or
# failed, and the wall times.
write_figures() {
	local rc=$1 doc=${E2E_KIND_FIGURES:-$root/docs/kind.md} summary figures
	summary=$(grep -E '^(Ran [0-9]+ of [0-9]+ Specs|(SUCCESS|FAIL)! -- )' "$artifacts/go-test.txt" | tr '\n' ' ')
	figures=$workdir/figures.md
	{
		echo "<!-- figures: written by e2e/kind/run.sh (make e2e-kind); do not edit -->"
		echo "Last full run: $(date -u +%Y-%m-%d), $MODE mode, on $(nproc) cores; exit status $rc."
		echo
		echo "- library: ${summary:-no summary (the suite did not finish)}"
		echo "- wall: the whole run $((SECONDS - started)) s; the library suite ${suite_wall:-?} s; the seed sweeps ${sweep_wall:-?} s"
		echo
		[ -f "$workdir/kind-report.md" ] && cat "$workdir/kind-report.md"
		echo "<!-- end of figures -->"
	} >"$figures"
	if [ -f "$doc" ] && grep -q '^<!-- figures: ' "$doc"; then
		sed -i -e "/^<!-- figures: /,/^<!-- end of figures -->/{/^<!-- figures: /{r $figures" -e "};d}" "$doc"
	else
		cat "$figures" >>"$doc"
	fi
	log "figures written to $doc"
}
