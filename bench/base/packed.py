"""Packed folders: a finished study's raw runs kept as one compressed archive beside where the folder was
(`<folder>.tar.xz`), unpacked on demand into the folder itself, which git ignores.

The raw result files of a noise study's rounds and pairs are read again only to re-judge the study, to compare its
sides by hand, or as points of a cell's history; the inference grid's, a machine's thousand points, only to render
GRID.md; a `make ab` comparison's processes, only to re-judge it or count their spread (`make ab-tally`). Kept as
folders they were most of the checkout's megabytes (JSON of raw step times compresses 7x to 30x), which a GPU
machine's hand-over limits. The archive is deterministic (members sorted, times and owners fixed), so packing the
same files again gives the same bytes and git sees no change.

`python -m bench.base.packed pack <folder>...` packs (the folder stays, unpacked); `unpack [<results folder>]` unpacks
every archive under it whose folder is missing. Readers call `unpacked` (one folder) or `unpack_all` (a tree).
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from bench.base.atomic import write_bytes_atomic
from bench.base.errors import BenchError

SUFFIX = ".tar.xz"
# the folders whose archives are tracked in place of their files (.gitignore ignores them, unpacked)
PACKED_UNDER = ("noise/runs", "noise/invocations", "grid", "ab")


def archive_of(folder: Path) -> Path:
    folder = Path(folder)
    return folder.with_name(folder.name + SUFFIX)


def folder_of(archive: Path) -> Path:
    archive = Path(archive)
    return archive.with_name(archive.name[: -len(SUFFIX)])


def pack(folder: Path) -> Path:
    """`folder` as `<folder>.tar.xz` beside it, written atomically and read back before it replaces an earlier one;
    the folder stays. Its members are its files under the folder's own name, sorted, with times and owners fixed."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BenchError(f"{folder}: no folder to pack")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and not p.name.endswith(".tmp"))
    if not files:
        raise BenchError(f"{folder}: nothing to pack (no files)")
    archive = archive_of(folder)
    buffer = io.BytesIO()  # a study's runs are megabytes: built and checked in memory, then written atomically
    with tarfile.open(fileobj=buffer, mode="w:xz", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{folder.name}/{path.relative_to(folder).as_posix()}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue()), mode="r:xz") as tar:  # read back whole
        packed = {m.name: m.size for m in tar.getmembers()}
    expected = {f"{folder.name}/{p.relative_to(folder).as_posix()}": p.stat().st_size for p in files}
    if packed != expected:
        raise BenchError(f"{archive}: the archive read back differs from {folder}'s files")
    write_bytes_atomic(archive, buffer.getvalue())
    return archive


def unpack(archive: Path) -> Path:
    """The archive's folder, extracted beside it where it is missing (into a temporary folder first, moved into place
    whole, so an interrupted extraction leaves no half folder); returns the folder."""
    archive = Path(archive)
    folder = folder_of(archive)
    if folder.is_dir():
        return folder
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=archive.parent))
    try:
        with tarfile.open(archive, mode="r:xz") as tar:
            names = {m.name.split("/", 1)[0] for m in tar.getmembers()}
            if names != {folder.name}:
                found = ", ".join(sorted(names))
                raise BenchError(f"{archive}: its members are not all under {folder.name}/ ({found})")
            tar.extractall(staging, filter="data")
        os.replace(staging / folder.name, folder)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise BenchError(f"{archive}: cannot unpack it ({e})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def unpacked(path: Path) -> Path:
    """`path` itself where it exists or has no archive; else its archive unpacked, or the archive of the folder that
    holds it (a side inside a packed study: .../runs/<stamp>/round-1/A)."""
    path = Path(path)
    if path.exists():
        return path
    for folder in (path, *path.parents):
        if not folder.name:  # "." or "/": no archive stands for it
            break
        if archive_of(folder).is_file():
            unpack(archive_of(folder))
            return path
        if folder.exists():
            break
    return path


def archives(results_dir: Path, places: tuple[str, ...] = PACKED_UNDER) -> list[Path]:
    """Every archive under the results folder's packed places (or those of `places`)."""
    found = []
    for place in places:
        parent = Path(results_dir) / place
        if parent.is_dir():
            found += [a for a in sorted(parent.rglob(f"*{SUFFIX}")) if not a.name.startswith(".")]
    return found


def unpack_all(results_dir: Path, places: tuple[str, ...] = PACKED_UNDER, say=lambda line: None) -> list[Path]:
    """Every archive under the results folder's packed places (or those of `places`) whose folder is missing,
    unpacked (each said as it is); returns those."""
    done = []
    for archive in archives(results_dir, places):
        if not folder_of(archive).is_dir():
            done.append(unpack(archive))
            say(f"unpacked {done[-1]}")
    return done


def main(argv: list[str] | None = None) -> int:
    from bench.base.argtypes import DEFAULT_RESULTS, OneLineErrors
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals
    from bench.base.resultsdir import existing_results_folder

    parser = OneLineErrors(prog="python -m bench.base.packed", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="pack folders into <folder>.tar.xz beside them (the folders stay)")
    packing.add_argument("folders", type=Path, nargs="+")
    unpacking = commands.add_parser("unpack", help="unpack every archive under a results folder's noise/, grid/ and "
                                    "ab/ whose folder is missing")
    unpacking.add_argument("results_dir", type=existing_results_folder, nargs="?", default=DEFAULT_RESULTS)
    args = parser.parse_args(argv)
    stop_on_signals()  # TERM, HUP, INT: the extraction's temporary folder goes with it
    return exit_status(lambda: packing_command(args))


def packing_command(args) -> int:
    if args.command == "pack":
        for folder in args.folders:
            archive = pack(folder)
            size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            packed = archive.stat().st_size / 2**20
            print(f"packed {folder} ({size / 2**20:.2f} MiB) into {archive} ({packed:.2f} MiB)")
        return 0
    before = len(archives(args.results_dir))
    done = unpack_all(args.results_dir, say=lambda line: print(line, flush=True))
    print(f"{len(done)} archive{'' if len(done) == 1 else 's'} under {args.results_dir} unpacked "
          f"({before - len(done)} {'was' if before - len(done) == 1 else 'were'} already)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
