#!/usr/bin/env python3
"""Install the uv binary pinned in containers/uv-requirements.txt, hash-checked, stdlib only.

Used inside the image build (Debian's python3.11 has no pip): finds the wheel with the pinned sha256 on
the package index's simple page, downloads it, refuses it unless its sha256 matches, and extracts the
`uv` executable. The same check `pip install --require-hashes` does, without pip.

  python3 install-uv.py REQUIREMENTS DEST_DIR
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import urllib.request
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

INDEX = os.environ.get("UV_INSTALL_INDEX", "https://pypi.org/simple/")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def main(requirements: str, dest: str) -> int:
    text = Path(requirements).read_text()
    m = re.search(r"^uv==(\S+)\s+--hash=sha256:([0-9a-f]{64})", text, re.M)
    if not m:
        sys.exit(f"{requirements}: no `uv==VERSION --hash=sha256:...` line")
    version, sha = m.groups()
    page_url = urljoin(INDEX, "uv/")
    with urllib.request.urlopen(page_url, timeout=120) as r:
        parser = Links()
        parser.feed(r.read().decode())
    urls = [urljoin(page_url, h) for h in parser.hrefs if h.endswith(f"#sha256={sha}")]
    if not urls:
        sys.exit(f"no file with sha256 {sha} for uv {version} on {page_url}")
    url = urls[0].split("#", 1)[0]
    whl = Path(dest) / ".uv.whl"
    h = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=300) as r, open(whl, "wb") as out:
        for chunk in iter(lambda: r.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    if h.hexdigest() != sha:
        whl.unlink()
        sys.exit(f"sha256 mismatch for {url}: got {h.hexdigest()}, pinned {sha}")
    target = Path(dest) / "uv"
    # A temporary beside it, fsynced and renamed over it: make takes an existing uv for a complete one, so an
    # interrupted install must leave none (this script stands alone in the image build: no bench.base.atomic here).
    partial = Path(dest) / ".uv.partial"
    with zipfile.ZipFile(whl) as z, z.open(f"uv-{version}.data/scripts/uv") as src, open(partial, "wb") as out:
        out.write(src.read())
        out.flush()
        os.fsync(out.fileno())
    whl.unlink()
    partial.chmod(0o755)
    os.replace(partial, target)
    print(f"installed uv {version} ({url.rsplit('/', 1)[-1]}, sha256 ok) to {target}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
