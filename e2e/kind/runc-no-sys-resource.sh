#!/usr/bin/env bash
# e2e/kind/runc-no-sys-resource.sh — the default runtime of the Docker
# daemon an own-mode run starts (lib.sh): runc, with CAP_SYS_RESOURCE taken
# out of the container's capabilities first.
#
# These VMs do not grant CAP_SYS_RESOURCE to root, and runc fails to start
# a container whose spec asks for a capability its caller lacks; Docker
# asks for it for privileged containers, which the kind nodes are. So on
# `create` (and `run`) the bundle's config.json loses it; everything else
# is runc's, with the arguments as given.
set -euo pipefail

RUNC=${CSISIM_RUNC:-runc}

bundle=. command=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case ${args[i]} in
	--bundle | -b) bundle=${args[i + 1]:-.} ;;
	--bundle=* | -b=*) bundle=${args[i]#*=} ;;
	create | run) [ -n "$command" ] || command=${args[i]} ;;
	esac
done

if [ -n "$command" ] && [ -f "$bundle/config.json" ]; then
	tmp=$bundle/config.json.csisim
	jq '(.process.capabilities // {}) |= with_entries(.value |= map(select(. != "CAP_SYS_RESOURCE")))' \
		"$bundle/config.json" >"$tmp"
	mv "$tmp" "$bundle/config.json"
fi
exec "$RUNC" "$@"
