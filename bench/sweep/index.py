"""The released versions of a package, as its index lists them: PyPI's JSON API, or a local folder of wheels (what the
tests serve through UV_FIND_LINKS). Final releases only (no pre-, dev- or yanked releases), oldest first."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from bench.errors import BenchError

PYPI_JSON = "https://pypi.org/pypi/{name}/json"


def local_versions(package: str, folder: Path) -> list[str]:
    found = set()
    for wheel in folder.glob("*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            continue
        if name == canonicalize_name(package):
            found.add(str(version))
    return sorted(found, key=Version)


def pypi_versions(package: str, url: str = PYPI_JSON, timeout_s: float = 30) -> list[str]:
    try:
        with urllib.request.urlopen(url.format(name=canonicalize_name(package)), timeout=timeout_s) as answer:
            releases = json.load(answer)["releases"]
    except (OSError, ValueError, KeyError) as e:
        raise BenchError(f"cannot list {package}'s releases from {url.format(name=package)}: {e}") from None
    kept = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if files and not version.is_prerelease and not all(f.get("yanked") for f in files):
            kept.append(text)
    return sorted(kept, key=Version)


def released_versions(package: str) -> list[str]:
    """From the local folder UV_FIND_LINKS names when uv is told to use no index (UV_NO_INDEX), else from PyPI."""
    links = os.environ.get("UV_FIND_LINKS")
    if links and os.environ.get("UV_NO_INDEX"):
        return local_versions(package, Path(links))
    return pypi_versions(package)


def between(versions: list[str], good: str, bad: str) -> list[str]:
    """good, the releases after it and bad, in order; refused where either is not a listed release or bad is earlier."""
    for name, version in (("GOOD", good), ("BAD", bad)):
        if version not in versions:
            raise BenchError(f"{name}={version} is not a release the index lists ({', '.join(versions[-8:])} ...)")
    low, high = versions.index(good), versions.index(bad)
    if high <= low:
        raise BenchError(f"BAD={bad} must be a later release than GOOD={good}")
    return versions[low : high + 1]
