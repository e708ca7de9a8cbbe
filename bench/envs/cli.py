"""Build, fingerprint and check the per-backend Python environments.

Stdlib only (Python 3.11). The envs are defined by envs/NAME/pyproject.toml (top-level pins),
resolved into envs/NAME/uv.lock and exported to envs/NAME/requirements.txt, the one install
artifact (hash-pinned) used by the venvs here, the containers and the Nix flake.

  build NAME... [--all [--stack S]] [--venv DIR] [--requirements FILE]   build/repair .venvs/NAME
  info NAME... [--json]                                       the env fingerprint
  check-locks [NAME...] [--envs-dir DIR]                      offline: locks current, exports in sync, envs consistent
  lock [NAME...] [--upgrade]                                  re-resolve (needs PyPI) and re-export
  vars NAME                                                   the cell environment variables, KEY=VALUE
  validate NAME                                               exit non-zero unless NAME is a backend
  names [--backends] [--stack S]                              the env names, one a line

An env is a backend on a stack: envs/<backend>/ today, envs/<backend>-2024/ on the 2024 stack
(bench/catalogue/backends.py).
"""
from __future__ import annotations

import argparse
import sys

from bench.base.errors import BenchError
from bench.catalogue.backends import (
    BACKENDS,
    DEFAULT_STACK,
    STACKS,
    STUDY_ENVIRONMENTS,
    cell_environment,
    env_name,
    stack_env_names,
)
from bench.envs.build import cmd_build
from bench.envs.common import BACKEND_ENV_NAMES, ENV_NAMES, ROOT, TOOLS, EnvError, check_name
from bench.envs.info import cmd_info
from bench.envs.locks import cmd_check_locks, cmd_lock


def cmd_vars(args) -> int:
    check_name(args.name, BACKEND_ENV_NAMES, "backend envs")
    for k, v in cell_environment(args.name).items():
        print(f"{k}={v}")
    return 0


def cmd_validate(args) -> int:
    # a BACKEND= value: a backend or a study env (the stack is STACK=), not an env name
    check_name(args.name, [*BACKENDS, *STUDY_ENVIRONMENTS] + ([TOOLS] if args.allow_tools else []),
               "envs" if args.allow_tools else "backends")
    return 0


def cmd_names(args) -> int:
    if args.stack is None:
        names = BACKEND_ENV_NAMES if args.backends else ENV_NAMES
    else:
        names = stack_env_names(args.stack) + ([] if args.backends else [TOOLS])
    print("\n".join(names))
    return 0


def cmd_env_name(args) -> int:
    if args.backend in STUDY_ENVIRONMENTS:  # a study's env exists on today's stack only
        if args.stack not in (None, "", DEFAULT_STACK):
            raise BenchError(
                f"{args.backend} is a study env of the {DEFAULT_STACK!r} stack only, not of {args.stack!r}"
            )
        print(args.backend)
        return 0
    print(env_name(args.backend, args.stack))
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="scripts/envs.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build or repair .venvs/NAME from envs/NAME/requirements.txt")
    b.add_argument("names", nargs="*", metavar="NAME")
    b.add_argument("--all", action="store_true", help="every env of --stack (and tools), in order")
    b.add_argument(
        "--stack", default=DEFAULT_STACK, choices=list(STACKS), help="the stack --all builds (default %(default)s)"
    )
    b.add_argument("--venv", help="venv dir (default .venvs/NAME)")
    b.add_argument("--requirements", help="requirements file (default envs/NAME/requirements.txt)")
    b.set_defaults(func=cmd_build)
    i = sub.add_parser("info", help="env fingerprint: python, lock, stamp, versions, framework build/devices")
    i.add_argument("names", nargs="*", metavar="NAME")
    i.add_argument("--all", action="store_true")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)
    for cname, func, hlp in (
        ("check-locks", cmd_check_locks, "offline consistency check of specs, locks, exports"),
        ("lock", cmd_lock, "re-resolve (needs PyPI) and re-export"),
    ):
        c = sub.add_parser(cname, help=hlp)
        c.add_argument("names", nargs="*", metavar="NAME")
        c.add_argument(
            "--envs-dir",
            "--root",
            dest="envs_dir",
            default=str(ROOT / "envs"),
            help="the envs/ dir to use (default: the repo's)",
        )
        if cname == "lock":
            c.add_argument("--upgrade", action="store_true", help="allow newer transitive versions")
        c.set_defaults(func=func)
    v = sub.add_parser("vars", help="the cell environment variables of a backend, KEY=VALUE")
    v.add_argument("name", metavar="NAME")
    v.set_defaults(func=cmd_vars)
    va = sub.add_parser("validate", help="exit non-zero unless NAME is a backend")
    va.add_argument("name", metavar="NAME")
    va.add_argument("--allow-tools", action="store_true", help="also accept the tools env")
    va.set_defaults(func=cmd_validate)
    na = sub.add_parser("names", help="the env names")
    na.add_argument("--backends", action="store_true", help="backend envs only (no tools)")
    na.add_argument("--stack", choices=list(STACKS), help="one stack's envs (default: every stack's)")
    na.set_defaults(func=cmd_names)
    en = sub.add_parser("env-name", help="the env that runs BACKEND on STACK")
    en.add_argument("backend", metavar="BACKEND")
    en.add_argument("stack", metavar="STACK", nargs="?", default=DEFAULT_STACK)
    en.set_defaults(func=cmd_env_name)
    return ap


def main(argv: list[str] | None = None) -> int:
    from bench.base.exit_status import exit_status
    from bench.base.lifetime import stop_on_signals

    args = parser().parse_args(argv)
    stop_on_signals()  # TERM and HUP as Ctrl-C: uv ended with it, no half-built env left, 143 / 129 / 130
    return exit_status(lambda: args.func(args), refusals=(EnvError, BenchError),
                       on_stop=lambda: print("interrupted: the env that was there is untouched", file=sys.stderr))
