#!/usr/bin/env bash
# The acceptance of make ab, third part, after run2.sh: more +20% pairs of each cell with its cap raised to the processes
# a side that 80% power needs at the spread of the first part's pairs, round-robin over the two cells whose pairs
# take minutes (native eager BERT predict's took 53 minutes at its cap of 59 a side).
set -u
cd /work/main
RESULTS=${RESULTS:-/work/ab-acceptance/results}
STOP_AT=${STOP_AT:-}   # epoch seconds: start no pair after this
while pgrep -f run2.sh >/dev/null; do sleep 10; done
for round in 1 2 3 4 5 6 7; do
  for job in "native-torch__bert__fit__bs2__eager 0.2 32" "jax__bert__fit__bs2__default 0.2 26"; do
    set -- $job
    if [ -n "$STOP_AT" ] && [ "$(date +%s)" -ge "$STOP_AT" ]; then echo "stop time reached before round $round: $1 cap $3"; exit 0; fi
    echo "== round $round: $1 B_DELAY=$2 MAX_PROCESSES=$3 start $(date -u +%FT%TZ)"
    make --no-print-directory ab A=HEAD B=HEAD CELL="$1" B_DELAY="$2" MAX_PROCESSES="$3" \
      RESULTS="$RESULTS" 2>&1 | grep -v "^\s*\(A\|B\) process" | tail -3
    echo "== end $(date -u +%FT%TZ) rc=${PIPESTATUS[0]}"
  done
done
