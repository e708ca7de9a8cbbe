#!/usr/bin/env bash
# One short session on a lent GPU machine that has its own Python (docs/OWN_ENVIRONMENT.md, section 0), in at most
# SESSION_MINUTES (default 9): install the offline bundle `make wheelhouse FOR=<that python>` made, resume `gpu-check`
# (only the checks not yet passed in this environment), then the cells that decide the published findings still
# open, in the order of what they decide (bench/studies/gpucheck/session.py PLAN), each skipped where this environment's results
# already hold it, and one GPU-utilisation capture of Keras 3 PyTorch Gemma fit; pack everything it wrote into one
# archive.
#
#   scripts/gpu-session.sh <bundle folder> [<archive folder or .tar.gz>]      (default: $OUT/gpu-session.tar.gz)
#
# Resumes by default, under the environment's key (Python, the frameworks', workload libraries' and CUDA builds'
# versions: bench/catalogue/ownenv.py environment_key; an incidental package such as zipp does not change it); FRESH=1 starts
# gpu-check's report afresh. CHECK_MINUTES (2) is gpu-check's budget; the cells get what is left of the session
# less a minute for the archive. PROFILE (paper; smoke: the same session rehearsed on a CPU with a stand-in
# nvidia-smi) and SYNC_SIZE (8192) size the checks; PYTHON is the machine's interpreter (python3); RESULTS (results).
# Each stage ends by its budget, and is also stopped by SIGTERM 30 s past it: what it finished is kept. The archive
# is rewritten after each stage, so a session cut short still returns what ran.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: scripts/gpu-session.sh <bundle folder> [<archive folder or .tar.gz>]}
target=${2:-${OUT:?usage: scripts/gpu-session.sh <bundle folder> <archive> (or OUT= set)}}
[[ $target == *.tar.gz ]] || target=$target/gpu-session.tar.gz
archive=$(realpath -m "$target")
mkdir -p "$(dirname "$archive")"
PYTHON=${PYTHON:-python3}
SESSION_MINUTES=${SESSION_MINUTES:-9}
CHECK_MINUTES=${CHECK_MINUTES:-2}
PROFILE=${PROFILE:-paper}
SYNC_SIZE=${SYNC_SIZE:-8192}
RESULTS=${RESULTS:-results}
FRESH=${FRESH:-}
logs=$RESULTS/gpu-session/$(date -u +%Y%m%dT%H%M%SZ)  # this session's logs, its record and its capture
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
session_start=$SECONDS

minutes_left() {  # of the session, less a minute for the archive
    "$PYTHON" -c "import sys; print(max(0.0, round((float(sys.argv[1]) * 60 - float(sys.argv[2]) - 60) / 60, 2)))" \
        "$SESSION_MINUTES" "$((SECONDS - session_start))"
}
seconds() { "$PYTHON" -c "import sys; print(int(float(sys.argv[1]) * 60 + 30))" "$1"; }

stamp=$(mktemp)  # what this session writes is what is newer than this
pack() {  # every file this session wrote under RESULTS (its logs among them)
    (cd "$RESULTS" && find . -type f -newer "$stamp" -print0 | tar -czf "$archive.tmp" --null -T -) &&
        mv "$archive.tmp" "$archive"
    echo "gpu-session: packed $(tar -tzf "$archive" | wc -l) files written under $RESULTS into $archive ($(du -h "$archive" | cut -f1))"
}

stage() {  # name, then the command; its output to the terminal and to its log
    local name=$1
    shift
    echo "gpu-session: $name: $* ($(date -u +%H:%M:%S))"
    local start=$SECONDS
    "$@" 2>&1 | tee "$logs/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "gpu-session: $name ended with exit $rc after $((SECONDS - start)) s" | tee -a "$logs/$name.log"
    pack
}

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
    "$PYTHON" -c "import sys; print(sys.executable, sys.version)"
} >"$logs/machine.txt" 2>&1
cat "$logs/machine.txt"

"$PYTHON" -m pip list --format=freeze >"$logs/pip-freeze-before.txt" 2>&1  # what the machine brought
stage install "$PYTHON" -m pip install --no-index --no-deps --no-cache-dir --find-links "$bundle" -r "$bundle/requirements.txt"
"$PYTHON" -m pip list --format=freeze >"$logs/pip-freeze.txt" 2>&1
"$PYTHON" -m bench gpu-session --results-dir "$RESULTS" --profile "$PROFILE" --plan >"$logs/plan.txt" 2>&1

resume=(--resume)
[[ -n $FRESH ]] && resume=()
stage gpu-check timeout -s TERM "$(seconds "$CHECK_MINUTES")" "$PYTHON" -m bench gpu-check --env current \
    --results-dir "$RESULTS" --budget-minutes "$CHECK_MINUTES" --profile "$PROFILE" --sync-size "$SYNC_SIZE" "${resume[@]}"

cells_minutes=$(minutes_left)
stage cells timeout -s TERM "$(seconds "$cells_minutes")" "$PYTHON" -m bench gpu-session --results-dir "$RESULTS" \
    --logs "$logs" --budget-minutes "$cells_minutes" --profile "$PROFILE"
echo "gpu-session: $((SECONDS - session_start)) s in all (limit $SESSION_MINUTES min)"
