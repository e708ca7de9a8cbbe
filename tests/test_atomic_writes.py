"""Every file the suite writes goes through bench/base/atomic.py (a temporary beside it, fsync, rename), so that a
reader or a crash never sees half of it: the modules of bench/ and scripts/ are read with ast for any other way to
write, move or create a file, and each one found must be below, with why it is no file a reader could find
half-written."""
import ast
from pathlib import Path

from conftest import REPO

# Calls that write a file's content in place, or put a file where a reader looks
WRITING_METHODS = {"write_text", "write_bytes", "savefig", "to_csv", "tofile", "symlink_to", "hardlink_to", "rename"}
WRITING_FUNCTIONS = {
    ("os", "replace"), ("os", "rename"), ("os", "open"), ("os", "fdopen"), ("os", "symlink"), ("os", "link"),
    ("shutil", "move"), ("shutil", "copy"), ("shutil", "copy2"), ("shutil", "copyfile"), ("shutil", "copytree"),
    ("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile"), ("np", "save"), ("np", "savez"), ("json", "dump"),
}
# (module, what it does) -> why it may
LOG = "a log, streamed as the process it records runs (a reader sees it grow; no one reads it as a whole file)"
MOVED_ASIDE = "an earlier file moved aside (to history/ or quarantine/) by a rename: nothing is written"
LOCK = "a run's or build's flock file: its content only says who holds it"
ALLOWED = {
    ("bench/base/atomic.py", "os.fdopen"): "the atomic writer itself",
    ("bench/base/atomic.py", "os.replace"): "the atomic writer itself",
    ("bench/base/atomic.py", "tempfile.mkstemp"): "the atomic writer itself",
    ("bench/base/atomic.py", "os.open"): "claim_new_file: an empty file created with O_EXCL, no content",
    ("bench/run/cell_process.py", "open('wb')"): LOG,
    ("bench/run/results_folder.py", "open('a')"): LOG,
    ("bench/studies/grid/workers.py", "open('a')"): LOG,
    ("bench/run/worker_process.py", "open('a')"): LOG,
    ("scripts/probe_tracking.py", "open('a')"): LOG,  # probe readings, a JSON line each, appended as taken
    ("bench/run/cluster/localslurm.py", "open('w')"): LOG,
    ("bench/record/results.py", "os.replace"): MOVED_ASIDE,
    ("bench/record/results_upkeep.py", "shutil.move"): MOVED_ASIDE,
    ("bench/studies/noise/study_file.py", "os.replace"): MOVED_ASIDE,
    ("bench/run/ceilings.py", "os.replace"): MOVED_ASIDE,
    ("bench/studies/gpucheck/run.py", "os.replace"): MOVED_ASIDE,
    ("bench/studies/gpucheck/session.py", "open('w')"): LOG,  # GPU utilisation samples, a line each as taken
    ("bench/base/runlock.py", "open('r+')"): LOCK,
    ("bench/base/runlock.py", "os.open"): LOCK,
    ("bench/envs/build.py", "open('a+')"): LOCK,
    ("bench/envs/build.py", "os.rename"): "a built env folder swapped in whole by renames; its stamp, written last "
    "through atomic.py, is what says it is complete",
    ("bench/run/results_folder.py", "tempfile.mkstemp"): "the results folder's write probe, removed at once",
    ("bench/run/interleaved.py", "open('w')"): LOG,
    ("bench/studies/ab/sides.py", ".symlink_to"): "a commit's worktree's link to the built envs, in a temporary "
    "folder removed with the worktree",
    ("bench/models/stable_diffusion/native_torch.py", ".write_text"): "the tokenizer's files in a private temporary "
    "folder, read back by the same call",
    ("bench/envs/wheelhouse.py", ".write_text"): "pip's requirement list, read by the pip this process starts next",
    ("bench/studies/sweep/derive.py", ".write_text"): "uv's inputs in a private temporary folder, read by the uv this "
                                                      "process "
    "starts next",
    ("bench/base/packed.py", "os.replace"): "an archive's folder, extracted into a temporary folder beside it, moved "
                                            "into "
    "place whole by a rename (an interrupted extraction leaves no half folder)",
    ("bench/base/packed.py", "open('w:xz')"): "an archive built in memory (io.BytesIO), then written by atomic.py",
    ("bench/base/packed.py", "open('r:xz')"): "reads an archive (xz's x is no exclusive create)",
    ("bench/studies/sweep/targets.py", "shutil.copyfile"): "a worker's output copied as the reference inside the "
                                                           "process's own "
    "scratch folder, read back by the same call",
}


def operation(call: ast.Call) -> str | None:
    """What the call does to the file system, as the allow-list names it, or None (a read, or no file at all)."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
    if (owner, name) in WRITING_FUNCTIONS:
        return f"{owner}.{name}"
    if name == "open":  # open(path, mode) or path.open(mode)
        positional = call.args[1:2] if isinstance(func, ast.Name) else call.args[:1]
        mode = next((k.value for k in call.keywords if k.arg == "mode"), positional[0] if positional else None)
        if mode is None:
            return None
        if not isinstance(mode, ast.Constant):
            return "open(mode)"
        return f"open({mode.value!r})" if set(str(mode.value)) & set("wax+") else None
    return f".{name}" if isinstance(func, ast.Attribute) and name in WRITING_METHODS else None


def writes_in(tree: ast.AST) -> list[tuple[str, int]]:
    """(operation, line) of each write in the tree, less those into the stream write_stream_atomic hands out."""
    into_atomic = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("write_stream_atomic")
        for arg in node.args[1:]
        for inner in ast.walk(arg)
    }
    return [
        (op, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and id(node) not in into_atomic and (op := operation(node))
    ]


def writes() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted([*(REPO / "bench").rglob("*.py"), *(REPO / "scripts").glob("*.py")]):
        name = str(path.relative_to(REPO))
        for op, line in writes_in(ast.parse(path.read_text(), name)):
            found.setdefault((name, op), []).append(line)
    return found


def test_every_write_goes_through_atomic_py():
    outside = {f"{name}:{lines} {op}" for (name, op), lines in writes().items() if (name, op) not in ALLOWED}
    assert sorted(outside) == []


def test_the_scan_sees_a_direct_write():
    """The scan itself: each way of writing it knows is found, a read or a write into atomic.py's stream is not."""
    code = """
p.write_text('x'); open(p, 'w'); p.open('a'); os.replace(a, b); np.save(p, x); fig.savefig(p)
open(p); p.open(); text.replace('a', 'b'); write_stream_atomic(p, lambda f: np.save(f, x))
"""
    assert sorted(op for op, _ in writes_in(ast.parse(code))) == sorted(
        ["open('w')", "open('a')", "os.replace", "np.save", ".savefig", ".write_text"]
    )


def test_a_failed_write_names_the_file_asked_for_never_its_temporary_and_leaves_none(tmp_path):
    """A message names the file the user named (OUT=/proc/x.md once said "/proc/.x.png.z7eqzkry.tmp"), and a full
    disk, whose error names no file at all, names it too; nothing half-written is left beside it."""
    import errno
    import os

    import pytest

    from bench.base.atomic import write_stream_atomic, write_text_atomic

    with pytest.raises(OSError) as raised:
        write_text_atomic(Path("/proc/x.md"), "text")
    assert raised.value.filename == "/proc/x.md", raised.value
    target = tmp_path / "page.md"

    def full_disk(f):
        f.write(b"half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError) as raised:
        write_stream_atomic(target, full_disk)
    assert raised.value.filename == str(target) and raised.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        if os.access(read_only, os.W_OK):  # root: write a file that cannot be replaced instead
            (read_only / "x.md").mkdir()
        with pytest.raises(OSError) as raised:
            write_text_atomic(read_only / "x.md", "text")
        assert raised.value.filename == str(read_only / "x.md"), raised.value
        assert [p.name for p in read_only.iterdir()] in ([], ["x.md"])
    finally:
        read_only.chmod(0o700)


def test_one_output_path_names_one_kind_of_file_and_its_others_go_beside_it(tmp_path):
    """OUT= of a command that writes several files names the first kind (compare: the Markdown) and each other goes
    beside it with its own suffix; OUT=x.json once had the Markdown overwritten by the JSON."""
    import pytest

    from bench.base.atomic import outputs_beside
    from bench.base.errors import BenchError

    out = tmp_path / "x.md"
    assert outputs_beside(out, (".md", ".json", ".png"), "OUT") == [out, tmp_path / "x.json", tmp_path / "x.png"]
    for wrong in ("x.json", "x.png", "x", "x.MD.json", "x.csv"):
        with pytest.raises(BenchError, match=r": name \S+\.md$"):
            outputs_beside(tmp_path / wrong, (".md", ".json", ".png"), "OUT")


def test_a_store_updated_by_processes_at_once_loses_no_update_and_leaves_no_lock(tmp_path):
    import subprocess
    import sys

    store = tmp_path / "store.json"
    code = ("import sys; from bench.base.atomic import update_json_atomic\n"
            "for _ in range(25): update_json_atomic(sys.argv[1], lambda d: (d or []) + [sys.argv[2]])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(store), str(i)], cwd=REPO) for i in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    import json

    written = json.loads(store.read_text())
    assert sorted(written) == sorted(str(i) for i in range(4) for _ in range(25))
    assert [p.name for p in tmp_path.iterdir()] == ["store.json"]


def test_files_written_together_replace_theirs_all_at_the_end_or_none(tmp_path):
    import pytest

    from bench.base.atomic import together, write_text_atomic

    a, b = tmp_path / "a.md", tmp_path / "b.png"
    a.write_text("old a")
    with together():
        write_text_atomic(a, "new a")
        with together():  # inside another: part of it
            write_text_atomic(b, "new b")
        assert a.read_text() == "old a" and not b.exists()  # nothing in place before the block ends
    assert (a.read_text(), b.read_text()) == ("new a", "new b")
    with pytest.raises(KeyboardInterrupt):  # a signal midway, as bench/base/lifetime.py raises it
        with together():
            write_text_atomic(a, "newer a")
            raise KeyboardInterrupt
    assert a.read_text() == "new a" and sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.png"]
