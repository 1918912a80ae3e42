#!/usr/bin/env bash
# Installs what real nodes run besides the kubelet (which `make realkube-bins`
# builds): containerd (with ctr and containerd-shim-runc-v2) and runc, from
# Debian's packages, when they are missing. nsenter and ip come with
# util-linux and iproute2. Needs root; does nothing when all are there.
set -euo pipefail
PATH="$PATH:/usr/sbin:/sbin"
need=()
for cmd in containerd ctr containerd-shim-runc-v2; do
  command -v "$cmd" >/dev/null || need+=(containerd)
done
command -v runc >/dev/null || need+=(runc)
command -v nsenter >/dev/null || need+=(util-linux)
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
mapfile -t pkgs < <(printf '%s\n' "${need[@]}" | sort -u)
echo "realnodes: installing ${pkgs[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null ||
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; }
# The package's service is not wanted: each real node starts a containerd of
# its own below its run root. Stop one the package may have started.
if command -v systemctl >/dev/null && systemctl is-active --quiet containerd 2>/dev/null; then
  systemctl stop containerd || true
fi
