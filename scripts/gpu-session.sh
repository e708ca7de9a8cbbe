#!/usr/bin/env bash
# One short session on a GPU machine that has its own Python (docs/OWN_ENVIRONMENT.md, section 0): install the
# offline bundle `make wheelhouse FOR=<that python>` made, run `make gpu-check` and a budgeted paper `make bench-all`
# of the cells the published findings turn on, and pack every result into one archive.
#
#   scripts/gpu-session.sh <bundle folder> <archive.tar.gz>
#
# CHECK_MINUTES (default 2.5) and BENCH_MINUTES (5) are the two budgets; BENCH_ARGS narrows bench-all (default: BERT,
# Gemma and Mistral on Keras 3 JAX, Keras 3 PyTorch and native PyTorch); REPEATS (2) processes a cell; PROFILE (paper). Each stage
# ends by its budget, and is also stopped by SIGTERM 30 s past it: what it finished is kept. The archive is rewritten
# after each stage, so a session cut short still returns what ran. PYTHON is the machine's interpreter (python3).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: scripts/gpu-session.sh <bundle folder> <archive.tar.gz>}
archive=$(realpath -m "${2:?usage: scripts/gpu-session.sh <bundle folder> <archive.tar.gz>}")
PYTHON=${PYTHON:-python3}
CHECK_MINUTES=${CHECK_MINUTES:-2.5}
BENCH_MINUTES=${BENCH_MINUTES:-5}
REPEATS=${REPEATS:-2}
PROFILE=${PROFILE:-paper}  # smoke: the same session rehearsed on a CPU
BENCH_ARGS=${BENCH_ARGS:-MODEL=bert,gemma,mistral BACKEND=jax,torch,native-torch}
RESULTS=${RESULTS:-results}
logs=$RESULTS/gpu-session/$(date -u +%Y%m%dT%H%MZ)  # this session's logs and notes
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1

# make where the machine has it; else the same commands the Makefile runs with ENV=current
have_make() { command -v make >/dev/null; }
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

if have_make; then
    stage gpu-check timeout -s TERM "$(seconds "$CHECK_MINUTES")" make gpu-check ENV=current PYTHON="$PYTHON" \
        BUDGET="$CHECK_MINUTES" RESULTS="$RESULTS"
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of make variables
    stage bench-all timeout -s TERM "$(seconds "$BENCH_MINUTES")" make bench-all ENV=current PYTHON="$PYTHON" \
        PROFILE="$PROFILE" REPEATS="$REPEATS" BUDGET="$BENCH_MINUTES" RESULTS="$RESULTS" $BENCH_ARGS
else
    echo "gpu-session: no make on this machine: the commands make would run"
    stage gpu-check timeout -s TERM "$(seconds "$CHECK_MINUTES")" "$PYTHON" -m bench gpu-check --env current \
        --results-dir "$RESULTS" --budget-minutes "$CHECK_MINUTES"
    bench_flags=()
    for assignment in $BENCH_ARGS; do
        bench_flags+=("--$(echo "${assignment%%=*}" | tr '[:upper:]' '[:lower:]')" "${assignment#*=}")
    done
    stage bench-all timeout -s TERM "$(seconds "$BENCH_MINUTES")" "$PYTHON" -m bench run --env current \
        --profile "$PROFILE" --repeats "$REPEATS" --budget-minutes "$BENCH_MINUTES" --results-dir "$RESULTS" "${bench_flags[@]}"
fi
