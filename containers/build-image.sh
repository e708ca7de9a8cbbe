#!/usr/bin/env bash
# Build the benchmark image of one backend from containers/Containerfile; prints the image ID last.
#
#   containers/build-image.sh BACKEND [--no-cache] [--tag NAME]   (BACKEND: a backend's env: jax, or jax-2024 on the 2024 stack)
#   containers/build-image.sh BACKEND --repro     # two --no-cache builds of one staged context: IDs must match
#   STAGE_ONLY=1 containers/build-image.sh BACKEND # stage the context, print its folder
#   BUILD_CONTEXT=DIR containers/build-image.sh BACKEND ...   # build from that staged context
#
# The build context is staged first: a copy of exactly what the Containerfile copies (bench/,
# scripts/envs.py, envs/*/requirements.txt, containers/), without bytecode. So the image does not
# depend on stray files in the work tree, and both builds of --repro see the same inputs even while
# the tree is being edited.
#
# Engine: podman if present, else docker (ENGINE= overrides). With podman the build is reproducible:
# --timestamp 0 (every file mtime and the created date), --pull=never (the base is local), the host's
# uv cache mounted at /root/.cache/uv (a rebuild re-downloads nothing) and the host's CA bundle as a
# build secret (never in a layer). The base image must be the one pinned in containers/base.lock
# (BASE_ALLOW_DRIFT=1 skips that check). With docker: BuildKit, SOURCE_DATE_EPOCH=0 and the CA secret,
# but no host uv cache (docker build has no bind volumes) and no reproducibility guarantee.
set -Eeuo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=containers/base.lock
source containers/base.lock
PYTHON="${PYTHON:-python3}"
ENGINE="${ENGINE:-$(command -v podman || command -v docker || true)}"
IMAGE_NAME="${IMAGE_NAME:-localhost/bench}"

die() { printf '[build-image] error: %s\n' "$*" >&2; exit 1; }
log() { printf '[build-image] %s\n' "$*" >&2; }

backend="${1:-}"; shift || true
[ -n "$backend" ] || die "usage: $0 BACKEND [--no-cache] [--tag NAME]"
$PYTHON scripts/envs.py vars "$backend" >/dev/null || die "unknown backend env '$backend'"
tag="$IMAGE_NAME:$backend"
extra=()
repro=
while [ $# -gt 0 ]; do
	case "$1" in
		--no-cache) extra+=(--no-cache); shift ;;
		--repro) repro=1; shift ;;
		--tag) tag="$2"; shift 2 ;;
		*) die "unknown option $1" ;;
	esac
done
[ -n "$ENGINE" ] || die "neither podman nor docker found: run scripts/install-system-deps.sh"
[ -f "envs/$backend/requirements.txt" ] || die "envs/$backend/requirements.txt missing"

# The base: present, and the pinned one.
base="$BASE_NAME:$BASE_TAG"
base_id="$("$ENGINE" image inspect --format '{{.Id}}' "$base" 2>/dev/null)" \
	|| die "base image $base not found: run \`make image-base\` (containers/build-base.sh)"
base_id="${base_id#sha256:}"
if [ -n "$BASE_IMAGE_ID" ] && [ "$base_id" != "$BASE_IMAGE_ID" ] && [ -z "${BASE_ALLOW_DRIFT:-}" ]; then
	die "base image $base is $base_id, not the pinned $BASE_IMAGE_ID (rebuild it with make image-base)"
fi

# The backend's cell variables, as build args; each must be declared in the Containerfile.
args=(--build-arg "BACKEND=$backend" --build-arg "BASE_IMAGE=$base")
while IFS='=' read -r key value; do
	[ -n "$key" ] || continue
	grep -qE "^ARG ${key}(=|\$)" containers/Containerfile \
		|| die "scripts/envs.py vars $backend names $key, which containers/Containerfile does not declare (add ARG + ENV)"
	args+=(--build-arg "$key=$value")
done < <($PYTHON scripts/envs.py vars "$backend")

cacert="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
[ -f "$cacert" ] || cacert="$($PYTHON -c 'import ssl; print(ssl.get_default_verify_paths().cafile or "")')"
[ -f "$cacert" ] || die "no CA bundle found (set SSL_CERT_FILE)"
args+=(--secret "id=cacert,src=$cacert")

case "$(basename "$ENGINE")" in
	podman)
		uv_cache="${UV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/uv}"
		mkdir -p "$uv_cache"
		args+=(--pull=never --timestamp 0 --ignorefile containers/Containerfile.dockerignore
			-v "$uv_cache:/root/.cache/uv:rw")
		log "podman build $tag (uv cache $uv_cache, CA $cacert)"
		;;
	docker)
		export DOCKER_BUILDKIT=1
		args+=(--pull=false --build-arg SOURCE_DATE_EPOCH=0)
		log "docker build $tag (no host uv cache with docker; reproducibility is checked with podman)"
		;;
	*) die "unsupported engine $ENGINE" ;;
esac

# Stage the context (see the header).
# BUILD_CONTEXT=DIR reuses a context staged earlier (STAGE_ONLY=1 stages one, prints it and stops).
if [ -n "${BUILD_CONTEXT:-}" ]; then
	stage="$BUILD_CONTEXT"
	iidfile="$(mktemp)"
	trap 'rm -f "$iidfile"' EXIT
else
	stage="$(mktemp -d "${TMPDIR:-/tmp}/bench-image.XXXXXX")"
	iidfile="$stage.iid"
	if [ -n "${STAGE_ONLY:-}" ]; then
		trap 'rm -f "$iidfile"' EXIT
	else
		trap 'rm -rf "$stage" "$iidfile"' EXIT
	fi
	tar -c --exclude=__pycache__ --exclude='*.pyc' bench scripts/envs.py envs/*/requirements.txt containers \
		| tar -x -C "$stage"
	if [ -n "${STAGE_ONLY:-}" ]; then
		echo "$stage"
		exit 0
	fi
fi

build() { # build [ENGINE ARGS...]: prints the image ID
	local start id size
	start=$(date +%s)
	nice -n 10 "$ENGINE" build "${args[@]}" "$@" --iidfile "$iidfile" -t "$tag" \
		-f "$stage/containers/Containerfile" "$stage" >&2
	id="$(cat "$iidfile")"
	id="${id#sha256:}"
	size="$("$ENGINE" image inspect --format '{{.Size}}' "$id")"
	log "built $tag id $id size $((size / 1000000)) MB in $(( $(date +%s) - start ))s"
	echo "$id"
}

if [ -z "$repro" ]; then
	build "${extra[@]}"
	exit 0
fi
# --repro: no layer cache (the uv cache stays warm: it holds downloads, not results). Layers as in a
# plain build (--layers=false would squash the steps into one layer: a different image).
id1="$(build --no-cache)"
id2="$(build --no-cache)"
echo "image-repro $backend: build 1 $id1"
echo "image-repro $backend: build 2 $id2"
if [ "$id1" = "$id2" ]; then
	echo "image-repro $backend: identical"
else
	echo "image-repro $backend: DIFFERENT image IDs (compare: $ENGINE image inspect --format '{{.RootFS.Layers}}' $id1 $id2)" >&2
	exit 1
fi
