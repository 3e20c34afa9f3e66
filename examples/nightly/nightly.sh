#!/usr/bin/env bash
# The nightly performance regression run: measure the committed tuned
# configs again on this GPU, compare the night with the last good one, and
# keep the night's database. Run from the repository root with bin/tune
# built.
#
# Usage: examples/nightly/nightly.sh STATE_DIR
#
#   STATE_DIR/last-good.db       the last night that passed the gate (the
#                                first night becomes it)
#   STATE_DIR/nights/STAMP.db    every night's database
#   STATE_DIR/gate.md            the gate's table (also appended to the
#                                job summary on GitHub Actions)
#   STATE_DIR/gate.bench.txt     both nights in the Go benchmark format:
#                                benchstat -col run gate.bench.txt
#   STATE_DIR/references/        the entries' float64 references, computed
#                                by the first night of a tune binary and
#                                read by the next ones (tune bench
#                                --ref-cache)
#
# Exit codes: those of tune regress (0 pass, 1 a case regressed or is
# missing, 2 bad input), or tune bench's when the measurement itself
# failed (1: no GPU, a GPU error, a case without a valid variant).
# last-good.db moves only on a night that passes, so a slowdown is
# reported again every night until it is fixed or accepted (accept it by
# copying the night's database over last-good.db).
set -uo pipefail
state=${1:?usage: examples/nightly/nightly.sh STATE_DIR}
tune=${TUNE:-./bin/tune}
tables=${TABLES:-$(ls configs/h200/*.json | paste -sd, -)}
night=$state/nights/$(date -u +%Y%m%dT%H%M%SZ).db
mkdir -p "$state/nights"

"$tune" bench --configs "$tables" --ref-cache "$state/references" --db "$night" || exit $?
echo "night: $night"
if [[ ! -f $state/last-good.db ]]; then
  cp "$night" "$state/last-good.db"
  echo "first night: it is the baseline from now on"
  exit 0
fi
"$tune" regress --baseline "$state/last-good.db" --db "$night" > "$state/gate.md"
rc=$?
"$tune" regress --baseline "$state/last-good.db" --db "$night" --format bench > "$state/gate.bench.txt" 2> /dev/null
cat "$state/gate.md"
if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
  cat "$state/gate.md" >> "$GITHUB_STEP_SUMMARY"
fi
if [[ $rc == 0 ]]; then
  cp "$night" "$state/last-good.db"
fi
exit $rc
