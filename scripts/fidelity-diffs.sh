#!/usr/bin/env bash
# fidelity-diffs.sh: csisim diff --json of library scenarios, one at a time
# (each starts a real control plane; two at once would only measure the
# machine), for make fidelity-report and make fidelity-all:
#
#   scripts/fidelity-diffs.sh OUTDIR NAME...
#
# writes OUTDIR/NAME.json (empty when the diff could not run) and
# OUTDIR/NAME.log (its progress and errors). Scenarios named in
# FIDELITY_SPED_UP are diffed with --speedup 10 (docs/fidelity.md, "Node
# loss in minutes"); those in FIDELITY_REAL_NODES are diffed a second time
# with --real-nodes, into OUTDIR/NAME.real-nodes.json. Whatever a diff
# says, the loop goes on: internal/cmd/fidelity-table judges the reports.
#
# Uses bin/csisim (make build) and the real components (make
# realkube-bins; make realnodes-deps for --real-nodes). Root.
set -uo pipefail
cd "$(dirname "$0")/.."

out=${1:?usage: fidelity-diffs.sh OUTDIR NAME...}
shift
mkdir -p "$out"

listed() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

# diff NAME SUFFIX FLAGS...: one diff, its report and log, its rc and wall.
diff_one() {
  local s=$1 suffix=$2
  shift 2
  local flags=("$@")
  if listed "$s" "${FIDELITY_SPED_UP:-}"; then flags+=(--speedup 10); fi
  echo "== csisim diff ${flags[*]:+${flags[*]} }scenarios/library/$s.yaml"
  local start=$SECONDS rc=0
  ./bin/csisim diff --json "${flags[@]}" "scenarios/library/$s.yaml" >"$out/$s$suffix.json" 2>"$out/$s$suffix.log" || rc=$?
  echo "   rc=$rc in $((SECONDS - start)) s"
}

for s in "$@"; do
  diff_one "$s" ""
  if listed "$s" "${FIDELITY_REAL_NODES:-}"; then diff_one "$s" .real-nodes --real-nodes; fi
done
