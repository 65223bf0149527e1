#!/usr/bin/env bash
# Rebuilds the example history database (reports/history/history.sqlite, committed xz-compressed: 4 MB -> 0.4 MB;
# `xz -dk reports/history/history.sqlite.xz` gives it back) from the runs committed under reports/, and its HTML
# report (reports/history/report/). Every step is a `harness history` command a team would type.
# Tags: the suite family of each run (batched-gemm, library); `experiment` for the measurement-method experiments of 2026-11-22
# and the safety check, `tuning` for config sweeps. Commits: those the runs' summaries name.
set -euo pipefail
cd "$(dirname "$0")/../.."
DB=${DB:-reports/history/history.sqlite}
R=reports
B=$R/h100-triton-3.6.0-vs-3.9.0
L=$R/h100-library-triton-3.6.0-vs-3.9.0
rm -f "$DB"
add() { python3 -m harness history add --db "$DB" "$@"; }

# H200, batched GEMMs, 2026-11-22 03:27 UTC (and its config sweep just before)
add --tag batched-gemm,tuning --label "sm90 sweep on the H200" $R/tuning/sweep-sm90.csv
add --tag batched-gemm --label "H200 batched GEMMs" $R/h200-triton-3.6.0-vs-3.9.0/compare.csv \
    $R/h200-triton-3.6.0-vs-3.9.0/compare-aa.csv
# H100, batched GEMMs: the persistent-kernel sweeps, the method experiments, the validated run at 10:20 UTC
add --tag batched-gemm,tuning --label "persistent sm90 sweep" $R/tuning/sweep-sm90-persistent.csv \
    $R/tuning/sweep-sm90-persistent-2.csv
add --tag batched-gemm,experiment --label "launch gap (power)" --commit a965e1d \
    $B/experiment-power/compare-aa-auto.csv $B/experiment-power/compare-aa-gap2x.csv
add --tag batched-gemm,experiment --label "launch gap A/A" $B/experiment-launch-gap/compare-aa-gap.csv
add --tag batched-gemm,experiment --label "placement shuffle" $B/experiment-placement/compare-aa-shuffle.csv
add --tag batched-gemm,experiment --label "input placement" $B/experiment-input-placement/golden-*.csv \
    $B/experiment-input-placement/run-0959/golden.csv $B/experiment-input-placement/run-0959/golden-aa.csv
add --tag batched-gemm --label "H100 batched GEMMs" --commit a906360 $B/compare.csv $B/compare-aa.csv
add --tag batched-gemm,experiment --label "safety checks" --commit 7b3c881 $B/safety/golden.csv $B/safety/tot.csv
# H100, the kernel library (attention, norms, plain and fp8 GEMMs, scaled MXFP4), 2026-11-23 23:35 UTC
add --tag library,tuning --label "library sweeps" --commit 2204624 $L/tuning/sweep-*.csv
add --tag library --label "H100 library" --commit 2204624 $L/compare.csv $L/compare-aa.csv

# known steps (the runs' sidecars, docs/results-format.md, the experiments' READMEs)
note() { python3 -m harness history annotate --db "$DB" "$@"; }
note --at 2026-11-22T08:10 --kind method "launch gap auto: 2x the kernel's time, at most 10 ms (was 1 ms)"
note --at 2026-11-22T08:52 --kind method "placement shuffled before every timed launch"
note --at 2026-11-22T09:50 --kind method "input placement A/B: inputs moved 5 places a rep, or fixed"
note --at 2026-11-22T09:59 --kind method "inputs moved 10 places a rep"
note --at 2026-11-22T10:20 --kind method "inputs moved before every timed launch (the default since)"
note --at 2026-11-23T23:40 --kind retune --gpu H100 "sm90 configs of the library picked from 922-point sweeps"

python3 -m harness history list --db "$DB"
python3 -m harness report --history "$DB" --out reports/history/report --title "History of the committed runs"
xz -9 -k -f "$DB"
