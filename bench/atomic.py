"""Writing a file so that a reader, or a crash, never sees half of it: a temporary beside it, fsync, rename. Every
module of bench/ writes its files through here (tests/test_atomic_writes.py holds the few exceptions, with why)."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from bench.errors import BenchError


def current_umask() -> int:
    """The process's umask, read without changing it (os.umask can only set it, and another thread may be creating
    a file meanwhile): /proc/self/status has it on Linux >= 4.7; elsewhere, set and restore."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_stream_atomic(path: Path, write: Callable[[BinaryIO], Any], mode: int = 0o666) -> None:
    """`write(f)` fills a temporary beside `path` (a file opened for binary writing: np.save, a figure's savefig and
    the like write into it); it is flushed, fsynced and renamed over `path`, with `mode` less the umask."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode & ~current_umask())  # mkstemp makes 0600: a shared results folder's other users must read it
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, mode: int = 0o666) -> None:
    write_stream_atomic(path, lambda f: f.write(data), mode)


def write_text_atomic(path: Path, text: str, mode: int = 0o666) -> None:
    write_bytes_atomic(path, text.encode(), mode)


def write_json_atomic(path: Path, data: Any) -> None:
    """JSON with one-space indents and no NaN (the result files' format)."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n")


def claim_new_file(candidates, mode: int = 0o644) -> Path | None:
    """The first of `candidates` (paths, in order) that did not exist, created empty with O_EXCL so that no other
    process or run can take the same name; None when every candidate exists."""
    for path in candidates:
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
            return path
        except FileExistsError:
            continue
    return None


def refuse_to_replace(path: Path, ours: Callable[[bytes], bool], option: str) -> None:
    """An output path the user names (OUT=, --out) replaces only a file this command wrote before, which `ours`
    recognises from its first bytes: never a result file, an input, or anything else it did not write (a mistyped
    OUT= once wrote a comparison over a result, with no history/ copy). Refused in one line naming the fix."""
    path = Path(path)
    if path.is_dir():
        raise BenchError(f"{option} {path} is a folder: name a file")
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        return
    except OSError as e:
        raise BenchError(f"{option} {path}: cannot read what is there ({e.strerror or e}): name a new file") from None
    if not ours(head):
        raise BenchError(f"{option} {path}: a file this command did not write is there; it is kept: name a new file")
