"""Where a table's numbers came from: hardware, OS, commits, dates, profile, and the software per environment."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.base.tables import github_table
from bench.catalogue.backends import BACKENDS, COMMON_ENVIRONMENT, cell_environment
from bench.catalogue.profiles import get_profile
from bench.judge.analysis import TableAnalysis
from bench.record.load import Group
from bench.record.results import Result
from bench.record.text import joined, md, plural, recorded
from bench.report.sections import Page

# Package versions shown per environment (those an environment does not have are left blank).
PACKAGES = (
    "tensorflow",
    "tf-keras",
    "keras",
    "keras-hub",
    "keras-nlp",
    "keras-cv",
    "jax",
    "jaxlib",
    "torch",
    "transformers",
    "diffusers",
    "peft",
)


def short_commit(git: dict) -> str:
    commit = git.get("commit") or "unknown"
    text = f"`{commit[:12]}`"
    if git.get("dirty") is True:
        text += " +dirty (uncommitted changes)"
    elif git.get("dirty") is None:
        text += f" (dirtiness unknown; commit from {git.get('source') or 'unknown source'})"
    return text


def provenance_section(table: TableAnalysis, page: Page) -> list[str]:
    group = table.group
    results = group.results
    machines = [r.provenance.get("machine", {}) for r in results]
    gpus = joined(
        ", ".join(
            f"{g.get('name')} (driver {g.get('driver')}, driver CUDA {g.get('driver_cuda')}, {g.get('memory')})"
            for g in m.get("gpus") or []
        )
        or "none (CPU only)"
        for m in machines
    )
    cpus = joined(
        f"{m.get('cpu')}, {m.get('logical_cpus')} logical CPUs, {m.get('memory_gib')} GiB RAM" for m in machines
    )
    commits = Counter(short_commit(r.provenance.get("git") or {}) for r in results)
    dates = sorted(r.created_at for r in results)
    lines = [
        f"- **GPU(s)**: {recorded(gpus)}",
        f"- **CPU**: {recorded(cpus)}",
        f"- **OS**: {recorded(joined(m.get('os') for m in machines) or 'unknown')}",
        "- **Git commit(s)**: " + "; ".join(f"{c} ({plural(n, 'cell')})" for c, n in sorted(commits.items())),
        f"- **Dates (UTC)**: {dates[0]} to {dates[-1]}" if dates[0] != dates[-1] else f"- **Date (UTC)**: {dates[0]}",
        f"- **Profile**: {group.profile} ({get_profile(group.profile).description}) chosen by: {joined(r.provenance.get('profile_choice') for r in results) or 'not recorded'}",
        f"- **Result files**: {len(results)}, under `{joined((Path(l.path).parent.as_posix() for l in group.items), '`, `')}`",
    ]
    return lines + [
        "",
        "Software per environment (every distinct value found in this table's results is listed):",
        "",
        env_table(group),
    ]


def env_table(group: Group) -> str:
    by_backend: dict[str, list[Result]] = {}
    for r in group.results:
        by_backend.setdefault(r.cell.backend, []).append(r)
    backends = [b for b in BACKENDS if b in by_backend]
    runs = {b: [run for r in by_backend[b] for run in r.runs] for b in backends}

    def row(name: str, value: Callable[[str], str]) -> list[str] | None:
        cells = [value(b) for b in backends]
        return [name, *(md(recorded(cell)) for cell in cells)] if any(cells) else None

    def from_runs(b: str, get: Callable[[Any], Any]) -> str:
        return joined(get(run) for run in runs[b])

    def lock(run) -> Any:
        env = (run.process or {}).get("environment") or {}
        sha = env.get("lock_sha256")
        return sha[:12] if sha else None

    def packages(name: str) -> Callable[[str], str]:
        return lambda b: from_runs(b, lambda run: ((run.process or {}).get("packages") or {}).get(name))

    def compile_setting(b: str) -> str:
        if BACKENDS[b].family == "native-torch":
            return joined(
                f"{run.settings.get('variant')}: "
                + (
                    f"torch.compile(mode={run.settings['compile_mode']})"
                    if run.settings.get("compile_mode")
                    else "no torch.compile"
                )
                for run in runs[b]
                if run.settings
            )
        return from_runs(b, lambda run: (run.settings or {}).get("jit_compile"))

    def dtypes(b: str) -> str:
        return from_runs(
            b,
            lambda run: (
                (run.settings or {}).get("dtype_policy")
                or "/".join((run.settings or {}).get("parameter_dtypes") or [])
                or None
            ),
        )

    def precision(b: str) -> str:
        return from_runs(
            b,
            lambda run: (
                ", ".join(f"{k}={v}" for k, v in sorted(((run.framework or {}).get("precision") or {}).items())) or None
            ),
        )

    def variables(b: str) -> str:
        expected = {**cell_environment(b), **COMMON_ENVIRONMENT}
        return joined(
            ", ".join(
                f"{k}={v}"
                for k, v in sorted(((run.process or {}).get("variables") or {}).items())
                if k != "BENCH_GIT_COMMIT" and expected.get(k) != v
            )
            or None
            for run in runs[b]
        )

    def cuda_build(run) -> str | None:
        builds = (run.framework.get("cuda_build"), run.framework.get("cudnn_build"))
        return "/".join(str(x) for x in builds) if any(builds) else None

    rows = [
        row("Python", lambda b: from_runs(b, lambda run: (run.process or {}).get("python"))),
        row("Env lock sha256", lambda b: from_runs(b, lock)),
        # the unlocked route (--env current): no lock, the fingerprint of every installed distribution in its place
        row(
            "Unlocked env: distributions sha256",
            lambda b: joined(
                str((r.provenance.get("environment") or {}).get("distributions_sha256") or "")[:12] or None
                for r in by_backend[b]
            ),
        ),
        row(
            "Input pipeline (where not the published tf.data)",
            lambda b: from_runs(b, lambda run: (run.settings or {}).get("input_pipeline")),
        ),
        *[row(name, packages(name)) for name in PACKAGES],
        row("CUDA / cuDNN build", lambda b: from_runs(b, cuda_build)),
        row("JAX CUDA plugin", lambda b: from_runs(b, lambda run: (run.framework or {}).get("cuda_plugin"))),
        row(
            "GPUs the framework saw",
            lambda b: from_runs(
                b,
                lambda run: (
                    ", ".join(run.framework["gpus"])
                    if run.framework.get("gpus")
                    else ("none" if run.framework else None)
                ),
            ),
        ),
        row("jit_compile / torch.compile", compile_setting),
        row("Dtype policy (Keras) / parameter dtypes", dtypes),
        row("Precision flags", precision),
        row("Behaviour variables beyond the suite's defaults", variables),
    ]
    return github_table([r for r in rows if r], headers=["", *[BACKENDS[b].display for b in backends]])
