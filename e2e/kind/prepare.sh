#!/usr/bin/env bash
# e2e/kind/prepare.sh — fill the kind backend's cache (make e2e-kind-prepare).
#
# Builds, once, everything an own-daemon run of make e2e-kind needs on a
# machine with no container registry, into ${CSISIM_CACHE:-~/.cache/csisim}
# (never the repository; see lib.sh for the layout):
#
# 1. Debian packages that are missing: docker.io (dockerd, containerd,
#    runc, iptables) and debootstrap;
# 2. the Go binaries, from the Go module proxy (realkube/build): the v1.37.2
#    control plane, kubelet, kubeadm, kubectl and kube-proxy, crictl, the CSI
#    sidecars and snapshot-controller, kind v0.33.0 and crane (the run's
#    registry);
# 3. two Debian bookworm root file systems with debootstrap: the node's
#    (systemd, containerd, runc, iptables, the CNI plugins, ...) and the
#    base of the images that need more than one binary;
# 4. the images, as docker-archive tarballs (go run ./e2e/kind/imagegen):
#    the control plane's, kube-proxy, pause, the sidecars,
#    snapshot-controller, busybox (Debian's busybox-static) and the csisim
#    image's base;
# 5. the node image: the node root file system with kind's own base files
#    (from the kind module source), the binaries, a containerd config for
#    these machines, and the images imported into its containerd; written
#    as a docker-archive and loaded into the own daemon's data root.
#
# Each step is skipped when its result is there; READY is written last.
# Needs root (apt-get, debootstrap, chroot). Exits 2 with a message when
# something it needs cannot be had, 1 when a step fails.
set -Eeuo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
# shellcheck source=e2e/kind/lib.sh
. "$here/lib.sh"

GO=${GO:-go}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SUITE=bookworm

missing() {
	printf 'e2e-kind-prepare: error: %s\n' "$*" >&2
	exit 2
}

[ "$(id -u)" = 0 ] || missing "run as root: it installs Debian packages and builds root file systems with debootstrap and chroot"
command -v "$GO" >/dev/null 2>&1 || missing "go not found (GO=$GO)"

# What the node's systemd, kind's entrypoint and the kubelet use (after
# kind's images/base/Dockerfile), with containerd and runc from Debian.
NODE_PACKAGES=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,jq,procps,containerd,runc,containernetworking-plugins
# The images' base: what csisim's driver executes (deploy/Dockerfile),
# what kube-proxy executes, and busybox for the scenarios' pods.
BASE_PACKAGES=util-linux,mount,e2fsprogs,xfsprogs,iptables,conntrack,busybox-static

# Bump these when what build_images or build_node_image makes changes
# other than through their inputs (the root file systems, the binaries),
# so that a cache made before is made again.
IMAGES_RECIPE=1
NODE_IMAGE_RECIPE=1

step() {
	kind_log "prepare: $*"
}

# 1. Debian packages.
install_packages() {
	local need=()
	command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
	command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
	command -v iptables >/dev/null 2>&1 || need+=(iptables)
	[ ${#need[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null 2>&1 ||
		missing "${need[*]} missing and no apt-get to install them: install Docker Engine (dockerd), debootstrap and iptables"
	step "installing ${need[*]} from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	# policy-rc.d keeps the package from starting a daemon: a run starts
	# its own, with its own settings, and stops it.
	local policy=/usr/sbin/policy-rc.d made_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		made_policy=1
	fi
	local rc=0
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } || rc=$?
	[ "$made_policy" = 1 ] && rm -f "$policy"
	[ "$rc" = 0 ] || missing "could not install ${need[*]} with apt-get (exit $rc): install Docker Engine, debootstrap and iptables by hand"
}

# 2. Go binaries (each skipped when built).
build_binaries() {
	step "Go binaries into $KIND_BIN (realkube/build; skipped when built)"
	(cd "$root" && "$GO" run ./realkube/build --only etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,csi-provisioner,csi-attacher,csi-resizer,csi-snapshotter,snapshot-controller,kind)
}

# 3. A root file system with debootstrap, into $KIND_CACHE/rootfs/NAME,
# redone when the package list changes.
rootfs() {
	local name=$1 packages=$2 dir=$KIND_CACHE/rootfs/$1
	local stamp="$DEBIAN_SUITE minbase $packages"
	if [ -f "$dir.stamp" ] && [ "$(cat "$dir.stamp")" = "$stamp" ]; then
		return 0
	fi
	step "root file system '$name' with debootstrap ($DEBIAN_SUITE, $DEBIAN_MIRROR)"
	rm -rf "$dir" "$dir.tmp" "$dir.stamp"
	mkdir -p "$KIND_CACHE/debs" "$dir.tmp"
	debootstrap --variant=minbase --include="$packages" --cache-dir="$KIND_CACHE/debs" \
		"$DEBIAN_SUITE" "$dir.tmp" "$DEBIAN_MIRROR" >"$KIND_CACHE/rootfs/$name.log" 2>&1 || {
		tail -20 "$KIND_CACHE/rootfs/$name.log" >&2
		rm -rf "$dir.tmp"
		return 1
	}
	# Nothing of the build host's: no apt lists, no resolver.
	rm -rf "$dir.tmp/var/lib/apt/lists"/* "$dir.tmp/var/cache/apt"/*.bin
	: >"$dir.tmp/etc/resolv.conf"
	mv "$dir.tmp" "$dir"
	echo "$stamp" >"$dir.stamp"
}

# layer_tar DIR TAR packs a root file system as an image layer: numeric
# owners, no device nodes (the runtime makes /dev).
layer_tar() {
	local dir=$1 out=$2
	tar -C "$dir" --numeric-owner --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* -cf "$out.tmp" . && mv "$out.tmp" "$out"
}

imagegen() {
	(cd "$root" && "$GO" run ./e2e/kind/imagegen "$@")
}

# kubeadm_image NAME is the tag kubeadm v1.37.2 runs NAME (etcd, pause,
# coredns) under.
kubeadm_image() {
	"$KIND_BIN/kubeadm" config images list --kubernetes-version "$KIND_KUBE_VERSION" 2>/dev/null | grep "/$1:"
}

# 4. The images, one archive each. Control plane, kube-proxy, etcd and
# pause under the names kubeadm runs them by; the sidecars under the names
# deploy/kubernetes gives them (deploy/doc.go); busybox as the scenarios
# ask for it (docker.io/library/busybox:latest, pulled from the run's
# registry).
build_images() {
	local img=$KIND_CACHE/images stamp
	stamp="images recipe $IMAGES_RECIPE; $(cat "$KIND_CACHE/rootfs/base.stamp"); binaries $(cd "$KIND_BIN" && cat .*.stamp | sha256sum)"
	if [ -f "$img/stamp" ] && [ "$(cat "$img/stamp")" = "$stamp" ]; then
		return 0
	fi
	step "images into $img"
	rm -rf "$img"
	mkdir -p "$img/tmp"
	layer_tar "$KIND_CACHE/rootfs/base" "$img/base-layer.tar"
	local name
	for name in kube-apiserver kube-controller-manager kube-scheduler; do
		imagegen --out "$img/$name.tar" --tag "registry.k8s.io/$name:$KIND_KUBE_VERSION" \
			--file "/usr/local/bin/$name=$KIND_BIN/$name" --entrypoint "/usr/local/bin/$name"
	done
	imagegen --out "$img/etcd.tar" --tag "$(kubeadm_image etcd)" \
		--file "/usr/local/bin/etcd=$KIND_BIN/etcd" --entrypoint /usr/local/bin/etcd
	# kube-proxy runs iptables and conntrack: it needs the base's.
	imagegen --out "$img/kube-proxy.tar" --tag "registry.k8s.io/kube-proxy:$KIND_KUBE_VERSION" \
		--layer "$img/base-layer.tar" --file "/usr/local/bin/kube-proxy=$KIND_BIN/kube-proxy" --entrypoint /usr/local/bin/kube-proxy
	# The pod sandbox: csisim-workload pause, under the tag containerd's
	# config names (kind's: 3.10) and the one kubeadm names.
	CGO_ENABLED=0 "$GO" -C "$root" build -trimpath -o "$img/tmp/csisim-workload" ./cmd/csisim-workload
	imagegen --out "$img/pause.tar" --tag registry.k8s.io/pause:3.10 --tag "$(kubeadm_image pause)" \
		--file "/pause=$img/tmp/csisim-workload" --entrypoint "/pause pause"
	local sidecar
	for sidecar in csi-provisioner:v6.4.0 csi-attacher:v4.13.0 csi-resizer:v2.3.0 csi-snapshotter:v8.7.0 snapshot-controller:v8.7.0; do
		name=${sidecar%%:*}
		imagegen --out "$img/$name.tar" --tag "registry.k8s.io/sig-storage/$sidecar" \
			--file "/$name=$KIND_BIN/$name" --entrypoint "/$name"
	done
	# busybox: Debian's busybox-static with its applets as links.
	mkdir -p "$img/tmp/busybox/bin"
	cp "$KIND_CACHE/rootfs/base/bin/busybox" "$img/tmp/busybox/bin/busybox"
	"$img/tmp/busybox/bin/busybox" --list | while read -r applet; do
		[ "$applet" = busybox ] || ln -sf busybox "$img/tmp/busybox/bin/$applet"
	done
	layer_tar "$img/tmp/busybox" "$img/tmp/busybox-layer.tar"
	imagegen --out "$img/busybox.tar" --tag docker.io/library/busybox:latest \
		--layer "$img/tmp/busybox-layer.tar" --entrypoint /bin/sh
	rm -rf "$img/tmp"
	echo "$stamp" >"$img/stamp"
}

# 5. The node image. kind's base files come from the kind module's source
# (go mod download), the rest from the steps before.
build_node_image() {
	local stamp stage=$KIND_CACHE/rootfs/node-image
	stamp="node image recipe $NODE_IMAGE_RECIPE; $(cat "$KIND_CACHE/rootfs/node.stamp"); images $(sha256sum <"$KIND_CACHE/images/stamp")"
	if [ -f "$KIND_CACHE/node-image.stamp" ] && [ "$(cat "$KIND_CACHE/node-image.stamp")" = "$stamp" ]; then
		return 0
	fi
	stage_node "$stage" "$stamp"
	step "node image $KIND_LOCAL_NODE_IMAGE"
	bake_images "$stage"
	layer_tar "$stage" "$KIND_CACHE/node-layer.tar"
	rm -rf "$stage" "$stage.stamp"
	imagegen --out "$KIND_CACHE/node-image.tar" --tag "$KIND_LOCAL_NODE_IMAGE" --layer "$KIND_CACHE/node-layer.tar" \
		--entrypoint "/usr/local/bin/entrypoint /sbin/init" --env container=docker --stop-signal SIGRTMIN+3
	rm -f "$KIND_CACHE/node-layer.tar"
	load_node_image
	rm -f "$KIND_CACHE/node-image.tar"
	echo "$stamp" >"$KIND_CACHE/node-image.stamp"
}

# stage_node STAGE STAMP lays the node's root file system out in STAGE,
# kind's base files (from the kind module's source) and the binaries in
# it; no daemon runs for it (e2e-kind-prepare's only step before the
# images go into the node's containerd). Skipped when STAGE was laid out
# for STAMP.
stage_node() {
	local stage=$1 stamp=$2 kindsrc
	if [ -f "$stage.stamp" ] && [ "$(cat "$stage.stamp")" = "$stamp" ]; then
		return 0
	fi
	step "node root file system, staged in $stage"
	kindsrc=$(module_dir sigs.k8s.io/kind@v0.33.0)
	[ -d "$kindsrc/images/base/files" ] || { echo "kind v0.33.0 module source not found" >&2; return 1; }
	rm -rf "$stage" "$stage.stamp"
	cp -a "$KIND_CACHE/rootfs/node" "$stage"
	assemble_node "$stage" "$kindsrc/images/base/files"
	echo "$stamp" >"$stage.stamp"
}

# assemble_node STAGE FILES lays out the node as kind's base image does
# (images/base/Dockerfile): kind's files, systemd trimmed to what a node
# runs, containerd, the kubelet and kubeadm.
assemble_node() {
	local stage=$1 files=$2
	install -m 0755 "$files"/usr/local/bin/* "$stage/usr/local/bin/"
	mkdir -p "$stage/kind/bin" "$stage/kind/manifests" "$stage/etc/kubernetes/manifests" "$stage/opt/cni/bin"
	install -m 0644 "$files"/kind/README.txt "$stage/kind/"
	install -m 0755 "$files"/kind/bin/* "$stage/kind/bin/"
	install -m 0644 "$files"/etc/crictl.yaml "$stage/etc/"
	install -m 0644 "$files"/etc/default/kubelet "$stage/etc/default/"
	install -m 0644 "$files"/etc/sysctl.d/* "$stage/etc/sysctl.d/"
	install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$stage/etc/systemd/system/"
	mkdir -p "$stage/etc/systemd/system/kubelet.service.d" "$stage/etc/containerd"
	install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$stage/etc/systemd/system/kubelet.service.d/"
	# containerd: kind's config, with the pod sandbox's oom_score_adj left
	# alone (these VMs do not grant CAP_SYS_RESOURCE, without which runc
	# cannot lower it and every sandbox fails to start).
	sed 's/^\(\s*restrict_oom_score_adj\s*=\s*\).*/\1true/' "$files/etc/containerd/config.toml" >"$stage/etc/containerd/config.toml"
	grep -q 'restrict_oom_score_adj = true' "$stage/etc/containerd/config.toml"
	ln -sf /usr/bin/containerd "$stage/usr/local/bin/containerd"
	install -m 0755 "$KIND_BIN/kubeadm" "$KIND_BIN/kubelet" "$KIND_BIN/kubectl" "$stage/usr/bin/"
	install -m 0755 "$KIND_BIN/crictl" "$stage/usr/local/bin/"
	local p
	for p in bridge host-local loopback portmap ptp; do
		install -m 0755 "$stage/usr/lib/cni/$p" "$stage/opt/cni/bin/$p"
	done
	# The runtime spec every container starts from, with kind's hook.
	chroot "$stage" ctr oci spec |
		chroot "$stage" jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		chroot "$stage" jq 'del(.process.rlimits)' >"$stage/etc/containerd/cri-base.json"
	# systemd: only what a node runs.
	find "$stage/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
	rm -f "$stage"/lib/systemd/system/multi-user.target.wants/* "$stage"/etc/systemd/system/*.wants/* \
		"$stage"/lib/systemd/system/local-fs.target.wants/* "$stage"/lib/systemd/system/sockets.target.wants/*udev* \
		"$stage"/lib/systemd/system/sockets.target.wants/*initctl* "$stage"/lib/systemd/system/basic.target.wants/*
	echo "ReadKMsg=no" >>"$stage/etc/systemd/journald.conf"
	ln -sf /usr/lib/systemd/systemd "$stage/sbin/init"
	chroot "$stage" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
	chroot "$stage" systemctl mask systemd-binfmt.service >/dev/null 2>&1
	echo "$KIND_KUBE_VERSION" >"$stage/kind/version"
	install -m 0644 "$here/node/default-storage.yaml" "$stage/kind/manifests/default-storage.yaml"
}

# bake_images STAGE imports every image into the node's containerd store
# (namespace k8s.io, as the kubelet's CRI finds them), with a containerd
# of this run's own whose root is the node's /var/lib/containerd: no
# container runs, nothing is unpacked (the node unpacks when it starts
# one).
bake_images() {
	local stage=$1 tmp pid f
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/csisim-kind-bake.XXXXXX")
	mkdir -p "$stage/var/lib/containerd"
	cat >"$tmp/config.toml" <<-EOF
		version = 2
		root = "$stage/var/lib/containerd"
		state = "$tmp/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
		[grpc]
		  address = "$tmp/containerd.sock"
		[ttrpc]
		  address = "$tmp/containerd.sock.ttrpc"
		[debug]
		  address = ""
	EOF
	containerd --config "$tmp/config.toml" >"$tmp/containerd.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 60); do
		ctr --address "$tmp/containerd.sock" version >/dev/null 2>&1 && break
		sleep 0.5
	done
	local rc=0
	for f in "$KIND_CACHE"/images/*.tar; do
		case $(basename "$f") in base-layer.tar | busybox.tar) continue ;; esac
		ctr --address "$tmp/containerd.sock" -n k8s.io images import --no-unpack --all-platforms "$f" >/dev/null || { rc=1; break; }
	done
	ctr --address "$tmp/containerd.sock" -n k8s.io images list -q >"$tmp/images.txt" 2>&1 || rc=1
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	if [ "$rc" != 0 ]; then
		cat "$tmp/containerd.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	step "images in the node: $(grep -c . "$tmp/images.txt")"
	rm -rf "$tmp"
}

# load_node_image loads the node image into the own daemon's data root,
# starting the daemon for it when no daemon of the run's own is up.
load_node_image() {
	local rundir
	rundir=$(mktemp -d "${TMPDIR:-/tmp}/csisim-kind-prepare.XXXXXX")
	own_dockerd_start "$rundir" || { own_dockerd_stop "$rundir"; rm -rf "$rundir"; return 1; }
	local rc=0
	docker load -i "$KIND_CACHE/node-image.tar" >/dev/null || rc=$?
	own_dockerd_stop "$rundir"
	rm -rf "$rundir"
	return "$rc"
}

main() {
	local start=$SECONDS
	# First, before the cache is touched: what cannot be had stops the
	# run with nothing changed.
	install_packages
	mkdir -p "$KIND_CACHE"
	rm -f "$KIND_CACHE/READY"
	build_binaries
	rootfs node "$NODE_PACKAGES"
	rootfs base "$BASE_PACKAGES"
	build_images
	build_node_image
	date -u +%Y-%m-%dT%H:%M:%SZ >"$KIND_CACHE/READY"
	step "done in $((SECONDS - start)) s; the cache: $KIND_CACHE"
}

main "$@"
