"""containers/install-uv.py against a package index served from a folder on this machine: it installs the pinned
wheel's uv, and an install that fails part way leaves the uv already there as it was (make takes an existing uv for
a complete one)."""
import functools
import hashlib
import http.server
import importlib.util
import io
import threading
import zipfile

import pytest
from conftest import REPO

VERSION = "0.0.1"


@pytest.fixture
def served(monkeypatch):
    """install_uv(index folder): the script's module, its INDEX the folder served over HTTP on 127.0.0.1."""
    servers = []

    def install_uv(index):
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(index))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        spec = importlib.util.spec_from_file_location("install_uv", REPO / "containers" / "install-uv.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr(module, "INDEX", f"http://127.0.0.1:{server.server_port}/")
        return module

    yield install_uv
    for server in servers:
        server.shutdown()
        server.server_close()


def index_with(tmp_path, payload: bytes, corrupt: bool = False):
    """An index whose uv page links one wheel holding `payload` as uv's script; `corrupt`: its bytes altered after
    zipping, so that reading the member fails its CRC check (the wheel's sha256 is taken after, and matches)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"uv-{VERSION}.data/scripts/uv", payload)
    data = buffer.getvalue()
    if corrupt:
        at = data.index(payload) + len(payload) // 2
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    sha = hashlib.sha256(data).hexdigest()
    page = tmp_path / "index" / "uv"
    page.mkdir(parents=True)
    (page / "uv.whl").write_bytes(data)
    (page / "index.html").write_text(f'<a href="uv.whl#sha256={sha}">uv.whl</a>')
    requirements = tmp_path / "uv-requirements.txt"
    requirements.write_text(f"uv=={VERSION} --hash=sha256:{sha}\n")
    return tmp_path / "index", requirements


def test_the_pinned_wheels_uv_is_installed_executable(tmp_path, served):
    index, requirements = index_with(tmp_path, b"#!/bin/sh\necho uv\n" * 100)
    dest = tmp_path / "bin"
    dest.mkdir()
    assert served(index).main(str(requirements), str(dest)) == 0
    assert (dest / "uv").read_bytes() == b"#!/bin/sh\necho uv\n" * 100 and (dest / "uv").stat().st_mode & 0o111
    assert sorted(p.name for p in dest.iterdir()) == ["uv"]


def test_an_install_that_fails_part_way_leaves_the_uv_there_as_it_was(tmp_path, served):
    index, requirements = index_with(tmp_path, b"new uv " * 1000, corrupt=True)
    dest = tmp_path / "bin"
    dest.mkdir()
    (dest / "uv").write_bytes(b"the uv before")
    with pytest.raises(zipfile.BadZipFile):
        served(index).main(str(requirements), str(dest))
    assert (dest / "uv").read_bytes() == b"the uv before"
