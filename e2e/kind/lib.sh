# e2e/kind/lib.sh — shared by prepare.sh and run.sh (sourced, not run).
#
# The kind backend's cache, and the Docker daemon of its own that a run
# starts when no daemon answers: what is in here is what `make
# e2e-kind-prepare` builds once and `make e2e-kind` uses.
#
# Layout of the cache ($CSISIM_CACHE, default ~/.cache/csisim):
#
#   realkube/v1.37.2/bin/      the Go binaries (realkube/build, --only kind too)
#   kind/v1.37.2/debs/         Debian packages debootstrap downloaded
#   kind/v1.37.2/rootfs/node/  the node image's root file system
#   kind/v1.37.2/rootfs/node-image/  the node image staged (stage_node), until
#                              its images are baked in and it is packed
#   kind/v1.37.2/rootfs/base/  the root file system under the csisim, kube-proxy
#                              and busybox images
#   kind/v1.37.2/images/       docker-archive tarballs of every image
#   kind/v1.37.2/docker/       the data root of the own Docker daemon (node image)
#   kind/v1.37.2/READY         written last by prepare.sh: the cache is whole

KIND_KUBE_VERSION=v1.37.2
KIND_CACHE_BASE=${CSISIM_CACHE:-$HOME/.cache/csisim}
KIND_CACHE=$KIND_CACHE_BASE/kind/$KIND_KUBE_VERSION
KIND_BIN=$KIND_CACHE_BASE/realkube/$KIND_KUBE_VERSION/bin
# The node image prepare.sh makes and loads into the own daemon.
KIND_LOCAL_NODE_IMAGE=csisim.local/kind-node:$KIND_KUBE_VERSION
# The kind network of an own-daemon run: a subnet of its own, pinned so
# that it cannot come up as whatever Docker picks (it came up as
# 172.17.0.0/16 when left alone). Its gateway is the host's end of the
# bridge, where the run's registry listens.
KIND_SUBNET=${KIND_SUBNET:-10.213.0.0/24}
KIND_GATEWAY=${KIND_GATEWAY:-10.213.0.1}
KIND_REGISTRY_PORT=${KIND_REGISTRY_PORT:-5310}

kind_log() {
	printf '%s e2e-kind: %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

# module_dir prints where the Go module cache holds MODULE@VERSION,
# downloading it from the module proxy if needed (GOFLAGS emptied: a
# -mod=vendor or the like of the caller's is no flag of go mod download).
module_dir() {
	GOFLAGS='' "${GO:-go}" mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

# kind_cache_ready says whether prepare.sh finished filling the cache.
kind_cache_ready() {
	[ -f "$KIND_CACHE/READY" ]
}

# own_dockerd_start RUNDIR starts dockerd with its socket, exec root and
# pid file in RUNDIR and its data root in the cache, and exports
# DOCKER_HOST for it. The daemon touches nothing of the host's network
# but its own bridges: no iptables rules, no IP forwarding, no masquerade,
# no default bridge; and a rule of ours drops anything forwarded to the
# outside interfaces. Its default runtime is runc-no-sys-resource.sh
# (these VMs do not grant CAP_SYS_RESOURCE, which Docker asks for).
own_dockerd_start() {
	local rundir=$1 here
	here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
	mkdir -p "$rundir" "$KIND_CACHE/docker"
	cat >"$rundir/daemon.json" <<-EOF
		{
		  "data-root": "$KIND_CACHE/docker",
		  "exec-root": "$rundir/exec",
		  "pidfile": "$rundir/dockerd.pid",
		  "hosts": ["unix://$rundir/docker.sock"],
		  "iptables": false,
		  "ip6tables": false,
		  "ip-forward": false,
		  "ip-masq": false,
		  "bridge": "none",
		  "dns": ["127.0.0.1"],
		  "storage-driver": "overlay2",
		  "log-driver": "json-file",
		  "runtimes": {"csisim-runc": {"path": "$here/runc-no-sys-resource.sh"}},
		  "default-runtime": "csisim-runc"
		}
	EOF
	own_forward_guard add
	kind_log "starting a Docker daemon of the run's own (data root $KIND_CACHE/docker, socket $rundir/docker.sock)"
	dockerd --config-file "$rundir/daemon.json" >"$rundir/dockerd.log" 2>&1 &
	echo $! >"$rundir/dockerd.launcher.pid"
	export DOCKER_HOST=unix://$rundir/docker.sock
	local i
	for i in $(seq 1 120); do
		if docker version >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$(cat "$rundir/dockerd.launcher.pid")" 2>/dev/null; then
			tail -20 "$rundir/dockerd.log" >&2
			return 1
		fi
		sleep 0.5
	done
	kind_log "the Docker daemon did not answer within 60 s; its log: $rundir/dockerd.log"
	return 1
}

# own_dockerd_stop RUNDIR stops the daemon own_dockerd_start started (and
# with it its containerd), removes its bridges and the forward rule, and
# the run directory's daemon files.
own_dockerd_stop() {
	local rundir=$1 pid i
	[ -f "$rundir/dockerd.launcher.pid" ] || return 0
	pid=$(cat "$rundir/dockerd.launcher.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			kind_log "warning: dockerd $pid did not stop within 30 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	# Bridges of the daemon's networks that outlived it.
	local br
	for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | grep '^br-' || true); do
		if [ -f "$rundir/bridges" ] && grep -qx "$br" "$rundir/bridges"; then
			ip link delete "$br" 2>/dev/null || true
		fi
	done
	own_forward_guard remove
	rm -f "$rundir/dockerd.launcher.pid" "$rundir/docker.sock"
	rm -rf "$rundir/exec"
	unset DOCKER_HOST
}

# own_forward_guard add|remove puts in (or takes out) the host rule that
# drops whatever would be forwarded from the kind network to any other
# interface, so that nothing of the run's can leave the machine even if
# forwarding is switched on by something else.
own_forward_guard() {
	local op=-I
	[ "$1" = remove ] && op=-D
	local rule=(FORWARD -s "$KIND_SUBNET" ! -d "$KIND_SUBNET" -m comment --comment csisim-e2e-kind -j DROP)
	if [ "$op" = -D ]; then
		while iptables -C "${rule[@]}" 2>/dev/null; do
			iptables -D "${rule[@]}" || break
		done
	elif ! iptables -C "${rule[@]}" 2>/dev/null; then
		iptables -I "${rule[@]}"
	fi
}
