#!/usr/bin/env bash
# The acceptance of make ab, second part, on the same 2-core VM: the +20% pairs with each cell's cap raised to the
# processes a side that its measured spread needs for 80% power (make ab-tally over the first part's pairs), and more
# A/A pairs at the default rule, interleaved so that a run cut short leaves both kinds. One `make ab` a pair.
set -u
cd /work/main
RESULTS=${RESULTS:-/work/ab-acceptance/results}
STOP_AT=${STOP_AT:-}   # epoch seconds: start no pair after this
for job in "native-torch__bert__fit__bs2__eager 0.2 32" "native-torch__bert__fit__bs2__eager 0 6" \
           "native-torch__bert__predict__bs2__eager 0 6" "native-torch__bert__predict__bs2__eager 0.2 59" \
           "native-torch__bert__fit__bs2__eager 0 6" "native-torch__bert__predict__bs2__eager 0 6" \
           "jax__bert__fit__bs2__default 0.2 26" "native-torch__bert__fit__bs2__eager 0 6" \
           "native-torch__bert__predict__bs2__eager 0 6" "native-torch__bert__fit__bs2__eager 0 6" \
           "native-torch__bert__predict__bs2__eager 0 6"; do
  set -- $job
  if [ -n "$STOP_AT" ] && [ "$(date +%s)" -ge "$STOP_AT" ]; then echo "stop time reached before: $1 delay $2 cap $3"; exit 0; fi
  echo "== $1 B_DELAY=$2 MAX_PROCESSES=$3 start $(date -u +%FT%TZ)"
  make --no-print-directory ab A=HEAD B=HEAD CELL="$1" $( [ "$2" != 0 ] && echo B_DELAY="$2" ) MAX_PROCESSES="$3" \
    RESULTS="$RESULTS" 2>&1 | grep -v "^\s*\(A\|B\) process" | tail -3
  echo "== end $(date -u +%FT%TZ) rc=${PIPESTATUS[0]}"
done
