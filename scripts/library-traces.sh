#!/usr/bin/env bash
# library-traces.sh: the trace (API writes and CSI calls, no wall-clock
# durations) of every library scenario for one seed, one file each, so that a
# refactor can be checked to change none of them:
#
#   scripts/library-traces.sh OUTDIR [SEED [NAME...]] write OUTDIR/<scenario>.trace
#                                                     (only the named scenarios with NAMEs)
#   scripts/library-traces.sh --compare DIR1 DIR2     exit 1 if any trace differs
#
# Uses bin/csisim (make build). Root: csisim's driver mounts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--compare" ]; then
  a=$2 b=$3 rc=0
  for f in "$a"/*.trace; do
    n=$(basename "$f")
    if [ ! -f "$b/$n" ]; then echo "missing in $b: $n"; rc=1; continue; fi
    if ! cmp -s "$f" "$b/$n"; then echo "differs: $n"; { diff "$f" "$b/$n" | head -5; } || true; rc=1; fi
  done
  for f in "$b"/*.trace; do [ -f "$a/$(basename "$f")" ] || { echo "missing in $a: $(basename "$f")"; rc=1; }; done
  [ $rc = 0 ] && echo "all $(ls "$a"/*.trace | wc -l) traces identical"
  exit $rc
fi

out=${1:?usage: library-traces.sh OUTDIR [SEED [NAME...]] | --compare DIR1 DIR2}
seed=${2:-1}
shift $(($# < 2 ? $# : 2))
files=(scenarios/library/*.yaml)
if [ $# -gt 0 ]; then
  files=()
  for n in "$@"; do files+=("scenarios/library/$n.yaml"); done
fi
mkdir -p "$out"
for s in "${files[@]}"; do
  n=$(basename "$s" .yaml)
  # A failing scenario still writes its trace; its exit code is kept beside it.
  rc=0
  ./bin/csisim run --quiet --seed "$seed" --trace "$out/$n.trace" "$s" >"$out/$n.out" 2>&1 || rc=$?
  echo "$rc" >"$out/$n.rc"
  printf '%-45s rc=%s\n' "$n" "$rc"
done
