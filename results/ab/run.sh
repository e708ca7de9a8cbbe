#!/usr/bin/env bash
# The acceptance pairs of make ab on this 2-core VM, round-robin so that a run cut short stays balanced and the machine's
# drift falls on every condition: each round is one +20% pair of each of three cells, then one A/A pair of each of two.
# Every pair is one `make ab` invocation (both sides interleaved, processes until decided, the default rule).
set -u
cd /work/main
RESULTS=${RESULTS:-/work/ab-acceptance/results}
ROUNDS=${ROUNDS:-8}
STOP_AT=${STOP_AT:-}   # epoch seconds: start no pair after this
for round in $(seq 1 "$ROUNDS"); do
  for job in "native-torch__bert__fit__bs2__eager 0.2" "native-torch__bert__predict__bs2__eager 0.2" \
             "jax__bert__fit__bs2__default 0.2" "native-torch__bert__fit__bs2__eager 0" \
             "native-torch__bert__predict__bs2__eager 0"; do
    set -- $job
    if [ -n "$STOP_AT" ] && [ "$(date +%s)" -ge "$STOP_AT" ]; then echo "stop time reached before round $round: $1 delay $2"; exit 0; fi
    echo "== round $round: $1 B_DELAY=$2 start $(date -u +%FT%TZ)"
    make --no-print-directory ab A=HEAD B=HEAD CELL="$1" $( [ "$2" != 0 ] && echo B_DELAY="$2" ) RESULTS="$RESULTS" 2>&1 | grep -v "^\s*\(A\|B\) process" | tail -3
    echo "== end $(date -u +%FT%TZ) rc=${PIPESTATUS[0]}"
  done
done
