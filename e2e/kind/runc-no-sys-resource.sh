#!/usr/bin/env bash
# e2e/kind/runc-no-sys-resource.sh — the default runtime of the Docker
# daemon an own-mode run starts (lib.sh): runc, with CAP_SYS_RESOURCE taken
# out of the container's capabilities first.
#
# These VMs do not grant CAP_SYS_RESOURCE to root, and runc fails to start
# a container whose spec asks for a capability its caller lacks; Docker
# asks for it for privileged containers, which the kind nodes are, and
# for `docker exec --privileged`, which kind runs on them. So on `create`
# (and `run`) the bundle's config.json loses it, and on `exec` the process
# spec (--process FILE); everything else is runc's, with the arguments as
# given.
set -euo pipefail

RUNC=${CSISIM_RUNC:-runc}

bundle=.
command=''
process=''
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case ${args[i]} in
	--bundle | -b) bundle=${args[i + 1]:-.} ;;
	--bundle=* | -b=*) bundle=${args[i]#*=} ;;
	--process | -p) process=${args[i + 1]:-} ;;
	--process=* | -p=*) process=${args[i]#*=} ;;
	create | run | exec) [ -n "$command" ] || command=${args[i]} ;;
	esac
done

# without_sys_resource FILE FIELD: FILE's capability sets at FIELD (a jq
# path) lose CAP_SYS_RESOURCE.
without_sys_resource() {
	local tmp=$1.csisim
	jq "($2 // {}) |= with_entries(.value |= map(select(. != \"CAP_SYS_RESOURCE\")))" "$1" >"$tmp"
	mv "$tmp" "$1"
}

case $command in
create | run) [ ! -f "$bundle/config.json" ] || without_sys_resource "$bundle/config.json" .process.capabilities ;;
exec) [ -z "$process" ] || [ ! -f "$process" ] || without_sys_resource "$process" .capabilities ;;
esac
exec "$RUNC" "$@"
