#!/usr/bin/env bash
# Build the reproducible Debian base image with debuerreotype and import it into podman.
#
#   containers/build-base.sh            # build build/base/rootfs.tar, import as $BASE_NAME:$BASE_TAG
#   BASE_ALLOW_DRIFT=1 containers/build-base.sh   # accept a rootfs/image that differs from base.lock
#
# Why it is reproducible: debuerreotype runs debootstrap (minbase) from one fixed archive state and
# clamps every mtime to that state's timestamp, removes logs/caches/machine-id, and writes a sorted,
# numeric-owner tarball; the import is a one-layer `FROM scratch` build with --timestamp 0. The same
# archive state in gives the same tarball and the same image ID out.
#
# The archive state is pinned by BASE_TIMESTAMP (containers/base.lock) = the Date of the suite's
# InRelease. debuerreotype normally reads that state from snapshot.debian.org, which is not reachable
# here, so it is run in --non-debian mode against DEBIAN_MIRROR (default deb.debian.org), after checking
# that the mirror still serves that very Release: a stable suite only changes at a point release, so if
# the Date matches, the packages are the same. If it does not, the build stops; either bump the pin
# (a new base, new IDs) or point DEBIAN_MIRROR at a snapshot of the pinned time where one is reachable:
#   DEBIAN_MIRROR=http://snapshot.debian.org/archive/debian/20260711T101637Z containers/build-base.sh
# The mirror never ends up in the image: its sources list always names deb.debian.org, suite only
# (no -updates/-security, which keep moving), so the Containerfile's `apt-get update` sees the same
# pinned package set.
set -Eeuo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=containers/base.lock
source "$repo/containers/base.lock"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
OUT="${BASE_OUT:-$repo/build/base}"
ENGINE="${ENGINE:-$(command -v podman || command -v docker || true)}"
image="$BASE_NAME:$BASE_TAG"

log() { printf '[build-base] %s\n' "$*" >&2; }
die() { printf '[build-base] error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
for tool in debuerreotype-init debootstrap wget; do
	command -v "$tool" >/dev/null || die "$tool not found: run scripts/install-system-deps.sh"
done
[ -n "$ENGINE" ] || die "neither podman nor docker found: run scripts/install-system-deps.sh"

# 1. The mirror must serve the pinned Release.
inrelease="$(wget -qO- "$DEBIAN_MIRROR/dists/$BASE_SUITE/InRelease")" || die "cannot fetch $DEBIAN_MIRROR/dists/$BASE_SUITE/InRelease"
release_date="$(awk -F': ' '$1 == "Date" { print $2; exit }' <<<"$inrelease")"
[ -n "$release_date" ] || die "cannot read $DEBIAN_MIRROR/dists/$BASE_SUITE/InRelease"
mirror_epoch="$(date -u --date "$release_date" +%s)"
pinned_epoch="$(date -u --date "$BASE_TIMESTAMP" +%s)"
if [ "$mirror_epoch" != "$pinned_epoch" ]; then
	die "$DEBIAN_MIRROR serves $BASE_SUITE of '$release_date', not the pinned $BASE_TIMESTAMP; use a snapshot mirror of the pinned time (see the header) or update BASE_TIMESTAMP in containers/base.lock"
fi
log "mirror $DEBIAN_MIRROR serves $BASE_SUITE @ $BASE_TIMESTAMP (epoch $pinned_epoch)"

# 2. debootstrap (minbase, merged /usr, Release signature checked against debian-archive-keyring).
rootfs="$OUT/rootfs"
rm -rf "$rootfs"
mkdir -p "$OUT"
start=$(date +%s)
nice -n 10 debuerreotype-init --non-debian --merged-usr --check-gpg \
	--keyring /usr/share/keyrings/debian-archive-keyring.gpg \
	"$rootfs" "$BASE_SUITE" "$DEBIAN_MIRROR"
[ "$(cat "$rootfs/debuerreotype-epoch")" = "$pinned_epoch" ] || die "debuerreotype epoch differs from the pin"

# 3. Sources: the suite alone, from deb.debian.org, whatever mirror was used to bootstrap.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $BASE_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
chmod 0644 "$rootfs/etc/apt/sources.list.d/debian.sources"

# 4. The same trimming as Debian's official "-slim" images: container apt/dpkg config, no docs/man/locales.
debuerreotype-minimizing-config "$rootfs"
debuerreotype-slimify "$rootfs"

# 5. The tarball (debuerreotype-tar runs debuerreotype-fixup: logs, caches, machine-id, mtimes).
debuerreotype-tar "$rootfs" "$OUT/rootfs.tar"
rootfs_sha="$(sha256sum "$OUT/rootfs.tar" | cut -d' ' -f1)"
rm -rf "$rootfs"
log "rootfs.tar sha256 $rootfs_sha ($(du -h "$OUT/rootfs.tar" | cut -f1)) in $(( $(date +%s) - start ))s"

# 6. Import: one layer, fixed timestamp, so the image ID is a function of the tarball alone.
cp "$repo/containers/Containerfile.base" "$OUT/Containerfile"
"$ENGINE" build --pull=never --no-cache --timestamp 0 --network none \
	-t "$image" -f "$OUT/Containerfile" "$OUT" >&2
image_id="$("$ENGINE" image inspect --format '{{.Id}}' "$image")"
log "image $image id $image_id, total $(( $(date +%s) - start ))s"
printf 'BASE_ROOTFS_SHA256=%s\nBASE_IMAGE_ID=%s\n' "$rootfs_sha" "$image_id" >"$OUT/base.ids"

# 7. Compare with the pins (empty pins: first build, print what to record).
drift=
if [ -n "$BASE_ROOTFS_SHA256" ] && [ "$BASE_ROOTFS_SHA256" != "$rootfs_sha" ]; then
	drift=1; log "rootfs sha256 $rootfs_sha differs from base.lock's $BASE_ROOTFS_SHA256"
fi
if [ -n "$BASE_IMAGE_ID" ] && [ "$BASE_IMAGE_ID" != "$image_id" ]; then
	drift=1; log "image id $image_id differs from base.lock's $BASE_IMAGE_ID"
fi
if [ -z "$BASE_ROOTFS_SHA256" ] || [ -z "$BASE_IMAGE_ID" ]; then
	log "no pins yet: record in containers/base.lock:"; cat "$OUT/base.ids" >&2
fi
if [ -n "$drift" ] && [ -z "${BASE_ALLOW_DRIFT:-}" ]; then
	die "the base is not the pinned one (BASE_ALLOW_DRIFT=1 to accept, then update containers/base.lock)"
fi
echo "$image"
