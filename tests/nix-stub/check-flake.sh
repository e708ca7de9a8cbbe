#!/usr/bin/env bash
# Evaluate the repo's flake offline against the stub nixpkgs (make check-flake, tests/test_flake.py).
#
#   tests/nix-stub/check-flake.sh [NIX_ARGS...]    # flake check --no-build + flake show
#   FLAKE_STAGE_ONLY=1 tests/nix-stub/check-flake.sh   # print the staged flake dir and stop
#
# The flake is staged first: a copy of exactly what it reads (flake.nix, flake.lock,
# envs/*/requirements.txt) plus this stub, so that
#  - the check works before these files are committed (nix's git fetcher hides untracked files), and
#  - nix does not copy the whole working tree (.venvs/ holds tens of GB) into the store.
# In a fresh clone (CI) the staged copy is the tracked files, so this is what `nix flake check
# --no-build --override-input nixpkgs path:./tests/nix-stub` at the root evaluates there.
set -Eeuo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
command -v nix >/dev/null || { echo "check-flake: nix not found: run scripts/install-system-deps.sh" >&2; exit 127; }

stage="$(mktemp -d "${TMPDIR:-/tmp}/bench-flake.XXXXXX")"
[ -n "${FLAKE_STAGE_ONLY:-}" ] || trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests"
cp "$repo/flake.nix" "$repo/flake.lock" "$stage/"
cp -r "$repo/tests/nix-stub" "$stage/tests/"
for req in "$repo"/envs/*/requirements.txt; do
	rel="${req#"$repo"/}"
	mkdir -p "$stage/$(dirname "$rel")"
	cp "$req" "$stage/$rel"
done
if [ -n "${FLAKE_STAGE_ONLY:-}" ]; then
	echo "$stage"
	exit 0
fi

cd "$stage"
nixargs=(--extra-experimental-features 'nix-command flakes' --override-input nixpkgs path:./tests/nix-stub "$@")
echo "check-flake: nix flake check --no-build, nixpkgs = tests/nix-stub" >&2
# (nix notes that it does not write the overridden lock: expected, filtered out)
quiet() { grep -v -e '^warning: not writing modified lock file' -e '^• Updated input' -e "^    'github:" -e "^  → 'path:" >&2 || true; }
rc=0
nix flake check --no-build "${nixargs[@]}" "path:$stage" 2> >(quiet) || rc=$?
[ "$rc" -eq 0 ] || { echo "check-flake: nix flake check failed ($rc)" >&2; exit "$rc"; }
nix flake show "${nixargs[@]}" "path:$stage" 2> >(quiet)
