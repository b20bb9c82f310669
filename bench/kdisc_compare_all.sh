#!/usr/bin/env bash
# The issue-3 k-discrimination target, one network per run (30 minutes each at most):
# the max k found in 120 s against the max k of a 30-minute run, for HyFair's 18 networks.
# Each network's JSON lands in bench/results/kdisc_120_vs_1800/; networks already there are skipped,
# so the runs can be spread over several sessions.  Run two of these with different orders to use
# both cores, e.g.  bench/kdisc_compare_all.sh  and  bench/kdisc_compare_all.sh --reverse
set -u
cd "$(dirname "$0")/.."
models="BM-1 BM-2 BM-3 BM-5 BM-6 BM-8 AC-1 AC-2 AC-3 AC-4 AC-5 AC-6 AC-7 AC-8 AC-9 AC-10 AC-11 AC-12"
if [ "${1:-}" = "--reverse" ]; then models=$(echo $models | tr ' ' '\n' | tac | tr '\n' ' '); fi
out_dir=bench/results/kdisc_120_vs_1800
mkdir -p "$out_dir"
for m in $models; do
  out=$out_dir/$m.json
  [ -s "$out" ] && continue
  # another run has it (its partial file exists): leave it
  [ -e "$out.tmp" ] && continue
  : > "$out.tmp"
  if nice -n 10 python bench/fairify.py --compare-kdisc 120,1800 --models "$m" --json "$out.tmp"; then
    mv "$out.tmp" "$out"
  else
    rm -f "$out.tmp"
  fi
done
