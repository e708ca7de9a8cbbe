"""The committed results as git has them at HEAD, for tests that read them as fixtures: a user's own `make bench-all`
rewrites results/ in the working tree (the earlier files move to history/), and `make test` after it must still pass."""
import atexit
import io
import shutil
import subprocess
import tarfile
import tempfile
from functools import cache
from pathlib import Path

from bench.base.packed import unpack_all

REPO = Path(__file__).resolve().parent.parent


@cache
def committed_results() -> Path:
    """A copy of HEAD's results/, extracted once per test process (about 15 MB; under a second)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD", "results"], cwd=REPO, capture_output=True, check=True
    ).stdout
    dest = Path(tempfile.mkdtemp(prefix="committed-results-"))
    atexit.register(shutil.rmtree, dest, True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    unpack_all(dest / "results")  # the noise studies' packed runs, as a reader of them unpacks them
    return dest / "results"
