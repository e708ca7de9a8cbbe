"""Writing a file so that a reader, or a crash, never sees half of it: a temporary beside it, fsync, rename. Every
module of bench/ writes its files through here (tests/test_atomic_writes.py holds the few exceptions, with why)."""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from bench.base.errors import BenchError


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


# The writes of the together() block this context is in, each (temporary, target), renamed into place as it ends
_TOGETHER: contextvars.ContextVar[list[tuple[str, Path]] | None] = contextvars.ContextVar("together", default=None)


@contextlib.contextmanager
def together() -> Iterator[None]:
    """Every file written through this module in the block replaces its target only as the block ends without an
    error, all of them then; an error or a signal in it removes every temporary, and each target keeps what it held
    (a full disk during make table once left the figures it had drawn beside the pages it had not). A block inside
    another is part of it. Only this context's writes (another thread's go on by themselves)."""
    if _TOGETHER.get() is not None:
        yield
        return
    pending: list[tuple[str, Path]] = []
    token = _TOGETHER.set(pending)
    try:
        yield
    except BaseException:
        for tmp, _ in pending:
            Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        _TOGETHER.reset(token)
    for i, (tmp, target) in enumerate(pending):
        try:
            os.replace(tmp, target)
        except BaseException as e:
            for left, _ in pending[i:]:
                Path(left).unlink(missing_ok=True)
            if isinstance(e, OSError):
                raise type(e)(e.errno, e.strerror or str(e), str(target)) from None
            raise


def write_stream_atomic(path: Path, write: Callable[[BinaryIO], Any], mode: int = 0o666) -> None:
    """`write(f)` fills a temporary beside `path` (a file opened for binary writing: np.save, a figure's savefig and
    the like write into it); it is flushed, fsynced and renamed over `path`, with `mode` less the umask."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.fchmod(fd, mode & ~current_umask())  # mkstemp makes 0600: a shared results folder's other users must read it
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if (pending := _TOGETHER.get()) is not None:
            pending.append((tmp, path))  # renamed as its together() block ends
            return
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        temporary = str(path.parent / f".{path.name}.")
        if isinstance(e, OSError) and (e.filename is None or str(e.filename).startswith(temporary)):
            # the file asked for, never its temporary (gone now), nor nothing (a full disk's error names no file)
            raise type(e)(e.errno, e.strerror or str(e), str(path)) from None
        raise


def write_bytes_atomic(path: Path, data: bytes, mode: int = 0o666) -> None:
    write_stream_atomic(path, lambda f: f.write(data), mode)


def write_text_atomic(path: Path, text: str, mode: int = 0o666) -> None:
    write_bytes_atomic(path, text.encode(), mode)


def write_json_atomic(path: Path, data: Any) -> None:
    """JSON with one-space indents and no NaN (the result files' format)."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n")


def read_json_or_none(path: Path) -> Any:
    """A JSON file's content; None where there is no file."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None


def update_json_atomic(
    path: Path, change: Callable[[Any], Any], read: Callable[[Path], Any] = read_json_or_none
) -> Any:
    """A store read, changed and written back whole, one writer at a time (bench/base/runlock.py store_lock):
    `read(path)` (None where there is none), then `change` of it written atomically; returns what was written. Two
    writers at once each keep the other's change (four triages said at once once kept three)."""
    from bench.base.runlock import store_lock

    with store_lock(Path(path)):
        data = change(read(Path(path)))
        write_json_atomic(path, data)
    return data


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


def outputs_beside(out: Path, suffixes: tuple[str, ...], option: str, what: str = "the output") -> list[Path]:
    """The files a command writes from one output path the user names (OUT=): `out` itself, of the first suffix's
    kind, and one beside it for each other suffix. `out` of another kind is refused in one line naming the right
    one: one path for two outputs once wrote the JSON over the Markdown (OUT=x.json)."""
    out = Path(out)
    if out.suffix != suffixes[0]:
        others = " and ".join(s.lstrip(".").upper() for s in suffixes[1:])
        beside = f" (its {others} written beside it)" if others else ""
        fixed = out.with_suffix(suffixes[0]) if out.suffix else out.with_name(out.name + suffixes[0])
        raise BenchError(f"{option} {out}: names {what}, a {suffixes[0]} file{beside}: name {fixed}")
    return [out, *(out.with_suffix(s) for s in suffixes[1:])]


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
