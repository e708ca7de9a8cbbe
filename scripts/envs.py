#!/usr/bin/env python3
"""Build, fingerprint and check the per-backend Python environments: the entry point of mk/envs.mk,
containers/Containerfile and flake.nix. The work is in bench/envs/ (stdlib only; `--help` lists the commands)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.envs.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
