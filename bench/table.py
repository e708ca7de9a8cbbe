"""RESULTS.md and its figures, from the result files alone.

One table per (profile, machine label): numbers from different hardware or profiles never share a table.
Each table is followed by where its numbers came from (hardware, software, code), a comparison with the
published Table 2 (paper profile only), and its figures. The output is deterministic: no render time, no
absolute paths, PNGs without a timestamp, so golden tests can compare it byte for byte.
"""
from __future__ import annotations

import csv
import os
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable, Iterable

try:
    from tabulate import tabulate
except ImportError:  # reported by render() as a clear error, not a traceback
    tabulate = None

from bench.backends import BACKENDS, COMMON_ENVIRONMENT, BenchError, cell_environment
from bench.provenance import machine_label, machine_slug
from bench.results import Result, load, result_files
from bench.workloads import MODELS, REFERENCE_CSV, TASKS, get_model, get_profile, published_rows

FIGURES = "figures"
PROFILE_ORDER = ("paper", "smoke")  # paper before smoke; any other profile after, by name
KERAS3 = ("tensorflow", "jax", "torch")
SHORT = {"keras2": "Keras 2", "tensorflow": "TF", "jax": "JAX", "torch": "PyTorch"}
BEST = "Keras 3 (best)"
# Package versions shown per environment (those an environment does not have are left blank).
PACKAGES = ("tensorflow", "tf-keras", "keras", "keras-hub", "keras-nlp", "keras-cv", "jax", "jaxlib", "torch", "transformers", "diffusers", "peft")
# The reference CSV's columns, by backend.
PUBLISHED_COLUMNS = {"keras2": "keras2_tensorflow", "tensorflow": "keras3_tensorflow", "jax": "keras3_jax", "torch": "keras3_torch"}
PUBLISHED_HARDWARE = "1x NVIDIA A100 40GB"
STATUS_TEXT = {"unsupported": "NA", "oom": "OOM", "timeout": "timeout", "error": "error", "killed": "killed", "unsteady": "unsteady", "oom-predicted": "OOM (predicted)"}
NOISY_CV = 0.10  # a cell whose steps vary more than this is flagged under its table
FIGURE_KINDS = ("speedup-keras2", "speedup-native", "per-row")
COLORS = {  # fixed per column, so every figure reads the same
    ("keras2", "default"): "#7f7f7f",
    ("tensorflow", "default"): "#ff7f0e",
    ("jax", "default"): "#1f77b4",
    ("torch", "default"): "#d62728",
    ("native-torch", "eager"): "#9467bd",
    ("native-torch", "compiled"): "#2ca02c",
}


@dataclass(frozen=True)
class Column:
    backend: str
    variant: str

    @property
    def header(self) -> str:
        display = BACKENDS[self.backend].display
        return f"{display} ({self.variant})" if self.backend == "native-torch" else display


COLUMNS = tuple(Column(b, "default") for b in ("keras2", *KERAS3)) + (Column("native-torch", "eager"), Column("native-torch", "compiled"))
NATIVE = tuple(c for c in COLUMNS if c.backend == "native-torch")


@dataclass(frozen=True)
class RowKey:
    """A row's identity: model, task and the batch size actually run."""

    model: str
    task: str
    batch_size: int

    def label(self) -> str:
        return f"{get_model(self.model).display} {self.task}"


@dataclass
class Loaded:
    path: str  # relative to the results folder, POSIX separators
    result: Result


@dataclass
class Group:
    """The results of one table: one profile on one machine label."""

    profile: str
    machine: str
    items: list[Loaded] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return f"{self.profile}__{machine_slug(self.items[0].result.provenance.get('machine', {}))}"

    def grid(self) -> dict[RowKey, dict[Column, Loaded]]:
        grid: dict[RowKey, dict[Column, Loaded]] = {}
        for item in self.items:
            c = item.result.cell
            row = grid.setdefault(RowKey(c.model, c.task, c.batch_size), {})
            column = Column(c.backend, c.variant)
            if column not in row or item.result.created_at > row[column].result.created_at:
                row[column] = item  # one file per cell by construction; the newest wins otherwise
        return {key: grid[key] for key in order_rows(self.profile, grid)}


# ---------------------------------------------------------------- loading and ordering


def load_results(results_dir: Path) -> list[Loaded]:
    """Every current result file; the first unreadable one raises CorruptResult naming it."""
    return [Loaded(p.relative_to(results_dir).as_posix(), load(p)) for p in result_files(results_dir)]


def group_results(items: list[Loaded]) -> list[Group]:
    groups: dict[tuple[str, str], Group] = {}
    for item in items:
        profile = item.result.cell.profile
        label = machine_label(item.result.provenance.get("machine", {}))
        groups.setdefault((profile, label), Group(profile, label)).items.append(item)
    rank = lambda g: (PROFILE_ORDER.index(g.profile) if g.profile in PROFILE_ORDER else len(PROFILE_ORDER), g.profile, g.machine)
    return sorted(groups.values(), key=rank)


def expected_rows(profile: str) -> list[tuple[RowKey, int]]:
    """The published rows at the batch sizes this profile runs them at, with the published batch size."""
    prof = get_profile(profile)
    rows, seen = [], set()
    for r in published_rows():
        key = RowKey(r.model, r.task, prof.batch_size(r.batch_size))
        if key not in seen:
            seen.add(key)
            rows.append((key, r.batch_size))
    return rows


def order_rows(profile: str, keys: Iterable[RowKey]) -> list[RowKey]:
    """Published order; a row only in the results goes after the published rows of its model and task."""
    expected = [k for k, _ in expected_rows(profile)]
    task_rank = {}
    for i, k in enumerate(expected):
        task_rank.setdefault((k.model, k.task), i)

    def rank(k: RowKey) -> tuple:
        first = task_rank.get((k.model, k.task), len(expected) + TASKS.index(k.task))
        if k in expected:
            return (MODELS.index(k.model), first, 0, expected.index(k))
        return (MODELS.index(k.model), first, 1, -k.batch_size)

    return sorted(set(keys), key=rank)


def published_batch(profile: str, key: RowKey) -> int | None:
    for k, published in expected_rows(profile):
        if k == key:
            return published
    return None


@cache
def read_published() -> tuple[list[str], dict[RowKey, dict[str, float | None]]]:
    """The reference CSV: its source note (comment lines) and ms/step per (row, backend); None for NA."""
    note, lines = [], []
    with REFERENCE_CSV.open() as f:
        for line in f:
            (note if line.startswith("#") else lines).append(line)
    table = {}
    for r in csv.DictReader(lines):
        key = RowKey(r["model"], r["task"], int(r["batch_size"]))
        table[key] = {b: (None if r[col].strip() == "NA" else float(r[col])) for b, col in PUBLISHED_COLUMNS.items()}
    return [n.lstrip("#").strip() for n in note], table


# ---------------------------------------------------------------- formatting helpers


def fmt_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_x(value: float) -> str:
    return f"{value:.2f}×"


def md(text: Any) -> str:
    """Safe inside a Markdown table cell: one line, no stray pipes."""
    return " ".join(str(text).split()).replace("|", "\\|")


def short_commit(git: dict) -> str:
    commit = git.get("commit") or "unknown"
    text = f"`{commit[:12]}`"
    if git.get("dirty") is True:
        text += " +dirty (uncommitted changes)"
    elif git.get("dirty") is None:
        text += f" (dirtiness unknown; commit from {git.get('source') or 'unknown source'})"
    return text


def distinct(values: Iterable[Any]) -> list[str]:
    """Distinct non-empty values, as text, in first-seen order."""
    out: list[str] = []
    for v in values:
        if v is None or v == "" or v == [] or v == {}:
            continue
        text = str(v)
        if text not in out:
            out.append(text)
    return out


def joined(values: Iterable[Any], sep: str = "; ") -> str:
    return sep.join(distinct(values))


def median(loaded: Loaded | None) -> float | None:
    if loaded is None or loaded.result.status != "ok":
        return None
    return loaded.result.summary().median


# ---------------------------------------------------------------- one table's numbers


@dataclass
class RowFacts:
    key: RowKey
    cells: dict[Column, Loaded]
    keras3_ms: dict[str, float]  # backend -> median, Keras 3 backends with a number
    winners: list[str]  # fastest Keras 3 backend(s), equal at the shown precision

    @property
    def best_ms(self) -> float | None:
        return min(self.keras3_ms.values()) if self.keras3_ms else None

    def ms(self, column: Column) -> float | None:
        return median(self.cells.get(column))


def row_facts(key: RowKey, cells: dict[Column, Loaded]) -> RowFacts:
    keras3 = {b: m for b in KERAS3 if (m := median(cells.get(Column(b, "default")))) is not None}
    return RowFacts(key, cells, keras3, winners_of(keras3))


def winners_of(ms: dict[str, float]) -> list[str]:
    if not ms:
        return []
    best = fmt_ms(min(ms.values()))
    return [b for b, m in ms.items() if fmt_ms(m) == best]


class Notes:
    """Numbered notes under a table (status messages), one number per distinct text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def unsteady_reasons(result: Result) -> list[str]:
    """Why a result's runs did not reach a steady state (bench.timing.StepTimer.steadiness), empty if they did."""
    return [reason for run in result.runs if run.steadiness and not run.steadiness.get("steady", True) for reason in run.steadiness.get("reasons", [])]


def references_ms(results: Iterable[Result]) -> list[float]:
    """The drift probe's figures (a fixed matmul timed before and after each cell process) of these results."""
    return [v for r in results for run in r.runs for v in (run.reference or {}).values() if isinstance(v, (int, float)) and v > 0]


def drift_of(results: Iterable[Result]) -> float | None:
    """How much the machine's speed moved over these results: the largest reference over the smallest, minus 1."""
    refs = references_ms(results)
    return max(refs) / min(refs) - 1 if len(refs) >= 2 else None


def within_noise(facts: "RowFacts") -> bool:
    """The row's ranking is not resolved: the gap between its two fastest Keras 3 backends is smaller than their
    spread (cv) or than the machine's drift while they ran."""
    ranked = sorted(facts.keras3_ms.items(), key=lambda kv: kv[1])
    if len(ranked) < 2:
        return False
    (first, best), (second, runner_up) = ranked[:2]
    results = [facts.cells[Column(b, "default")].result for b in (first, second)]
    noise = max([r.summary().cv for r in results] + [drift_of(results) or 0.0])
    return runner_up / best - 1 < noise


def measured_text(result: Result, unit_in_cell: bool) -> str:
    s = result.summary()
    text = f"{fmt_ms(s.median)} ±{s.cv * 100:.1f}%" + (" ⚠" if unsteady_reasons(result) else "")
    if unit_in_cell:
        text += f" {result.unit}"
    if result.tokens_per_s():
        text += f" · {result.tokens_per_s():.1f} tok/s"
    return text


def status_cell(loaded: Loaded, notes: Notes) -> str:
    r = loaded.result
    label = STATUS_TEXT.get(r.status, r.status)
    message = md(r.message or "no message recorded")
    if len(message) > 400:
        message = message[:400] + " … (the whole message is in the result file)"
    return f"{label} [{notes.ref(message)}]"


def row_unit(facts: RowFacts) -> tuple[str | None, bool]:
    """(unit for the row label when not ms/step, whether each cell must carry its own unit)."""
    units = distinct(l.result.unit for l in facts.cells.values() if l.result.status == "ok")
    if len(units) > 1:
        return None, True
    if units and units[0] != "ms/step":
        return units[0], False
    return None, False


def main_table(group: Group, rows: list[RowFacts], notes: Notes) -> str:
    headers = ["Model / task", "Batch", *[c.header for c in COLUMNS], BEST]
    body = []
    for facts in rows:
        unit, unit_in_cell = row_unit(facts)
        label = facts.key.label() + (f" ({unit})" if unit else "")
        published = published_batch(group.profile, facts.key)
        batch = str(facts.key.batch_size)
        if published is not None and published != facts.key.batch_size:
            batch += f" (published {published})"
        elif published is None:
            batch += " (not a published row)"
        line = [md(label), batch]
        for column in COLUMNS:
            loaded = facts.cells.get(column)
            if loaded is None:
                line.append("")
            elif loaded.result.status != "ok":
                line.append(status_cell(loaded, notes))
            else:
                text = measured_text(loaded.result, unit_in_cell)
                if column.backend in facts.winners and len(facts.keras3_ms) >= 2:
                    text = f"**{text}**"
                line.append(text)
        if facts.best_ms is not None:
            marker = ("" if len(facts.keras3_ms) == len(KERAS3) else " †") + (" ≈" if within_noise(facts) else "")
            line.append(f"{fmt_ms(facts.best_ms)} ({', '.join(SHORT[b] for b in facts.winners)}){marker}")
        else:
            line.append("")
        body.append(line)
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def legend(group: Group, rows: list[RowFacts]) -> list[str]:
    counts = distinct(f"{l.result.summary().count}" for f in rows for l in f.cells.values() if l.result.status == "ok")
    lines = [
        "Each cell: **median** ms/step over every timed step of the cell (all repeats pooled; the first step and the warm-up "
        "steps are excluded) **± the coefficient of variation** (stdev / mean) of those steps. Lower is better. "
        f"Timed steps per cell: {', '.join(counts) or 'none'} (per-cell details below).",
        "Unit: ms/step unless the row names another (generate rows: ms per generate call, with generated tokens/s; "
        "StableDiffusion predict: ms per denoising step).",
        "**Bold**: the fastest Keras 3 backend of the row, as published (ties at the shown precision are all bold; "
        "no bold where fewer than two Keras 3 backends have a number). "
        f"{BEST}: that figure and its backend; † = chosen among fewer than three Keras 3 backends with a number.",
        "NA: the cell cannot run on that backend (unsupported); OOM: out of memory; timeout: killed at the time limit; "
        "error: the cell failed. [n] points to the note with the message. Empty: not run.",
    ]
    noisy = sum(1 for f in rows for l in f.cells.values() if l.result.status == "ok" and l.result.summary().cv > NOISY_CV)
    if noisy:
        lines.append(f"Spread above {NOISY_CV:.0%} in {noisy} cell{'s' if noisy != 1 else ''}: too few or unsteady steps; read those medians as rough.")
    unsteady = sum(1 for f in rows for l in f.cells.values() if unsteady_reasons(l.result))
    if unsteady:
        lines.append(f"⚠ unsteady ({unsteady} cell{'s' if unsteady != 1 else ''}): a compile inside the timed steps, warm-up stopped at its cap, "
                     "a step far above the median or an impossible derived figure; the reasons are in the per-cell details.")
    unresolved = sum(1 for f in rows if within_noise(f))
    if unresolved:
        lines.append(f"≈ ({unresolved} row{'s' if unresolved != 1 else ''}): the gap between the two fastest Keras 3 backends is smaller than their "
                     "spread or the machine's drift while they ran, so that ranking is not resolved.")
    drift = drift_of(l.result for l in group.items)
    if drift is not None:
        refs = references_ms(l.result for l in group.items)
        lines.append(f"Machine drift over these results: the reference matmul (timed before and after every cell) ranged from "
                     f"{min(refs):.3g} to {max(refs):.3g} ms, {drift:.0%} apart.")
    return lines


# ---------------------------------------------------------------- provenance


def provenance_block(group: Group) -> list[str]:
    results = [l.result for l in group.items]
    machines = [r.provenance.get("machine", {}) for r in results]
    gpus = distinct(
        ", ".join(
            f"{g.get('name')} (driver {g.get('driver')}, driver CUDA {g.get('driver_cuda')}, {g.get('memory')})" for g in m.get("gpus") or []
        )
        or "none (CPU only)"
        for m in machines
    )
    cpus = distinct(f"{m.get('cpu')}, {m.get('logical_cpus')} logical CPUs, {m.get('memory_gib')} GiB RAM" for m in machines)
    commits = Counter(short_commit(r.provenance.get("git") or {}) for r in results)
    dates = sorted(r.created_at for r in results)
    lines = [
        f"- **GPU(s)**: {'; '.join(gpus)}",
        f"- **CPU**: {'; '.join(cpus)}",
        f"- **OS**: {joined(m.get('os') for m in machines) or 'unknown'}",
        "- **Git commit(s)**: " + "; ".join(f"{c} ({n} cell{'s' if n != 1 else ''})" for c, n in sorted(commits.items())),
        f"- **Dates (UTC)**: {dates[0]} to {dates[-1]}" if dates[0] != dates[-1] else f"- **Date (UTC)**: {dates[0]}",
        f"- **Profile**: {group.profile} ({get_profile(group.profile).description}) chosen by: {joined(r.provenance.get('profile_choice') for r in results) or 'not recorded'}",
        f"- **Result files**: {len(results)}, under `{joined((Path(l.path).parent.as_posix() for l in group.items), '`, `')}`",
    ]
    return lines + ["", "Software per environment (every distinct value found in this table's results is listed):", "", env_table(group)]


def env_table(group: Group) -> str:
    by_backend: dict[str, list[Result]] = {}
    for l in group.items:
        by_backend.setdefault(l.result.cell.backend, []).append(l.result)
    backends = [b for b in BACKENDS if b in by_backend]
    runs = {b: [run for r in by_backend[b] for run in r.runs] for b in backends}

    def row(name: str, value: Callable[[str], str]) -> list[str] | None:
        cells = [value(b) for b in backends]
        return [name, *map(md, cells)] if any(cells) else None

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
                f"{run.settings.get('variant')}: " + (f"torch.compile(mode={run.settings['compile_mode']})" if run.settings.get("compile_mode") else "no torch.compile")
                for run in runs[b]
                if run.settings
            )
        return from_runs(b, lambda run: (run.settings or {}).get("jit_compile"))

    def dtypes(b: str) -> str:
        return from_runs(b, lambda run: (run.settings or {}).get("dtype_policy") or "/".join((run.settings or {}).get("parameter_dtypes") or []) or None)

    def precision(b: str) -> str:
        return from_runs(b, lambda run: ", ".join(f"{k}={v}" for k, v in sorted(((run.framework or {}).get("precision") or {}).items())) or None)

    def variables(b: str) -> str:
        expected = {**cell_environment(b), **COMMON_ENVIRONMENT}
        return joined(
            ", ".join(f"{k}={v}" for k, v in sorted(((run.process or {}).get("variables") or {}).items()) if k != "BENCH_GIT_COMMIT" and expected.get(k) != v)
            or None
            for run in runs[b]
        )

    rows = [
        row("Python", lambda b: from_runs(b, lambda run: (run.process or {}).get("python"))),
        row("Env lock sha256", lambda b: from_runs(b, lock)),
        *[row(name, packages(name)) for name in PACKAGES],
        row("CUDA / cuDNN build", lambda b: from_runs(b, lambda run: "/".join(str(x) for x in (run.framework.get("cuda_build"), run.framework.get("cudnn_build"))) if run.framework.get("cuda_build") or run.framework.get("cudnn_build") else None)),
        row("JAX CUDA plugin", lambda b: from_runs(b, lambda run: (run.framework or {}).get("cuda_plugin"))),
        row("GPUs the framework saw", lambda b: from_runs(b, lambda run: ", ".join(run.framework["gpus"]) if run.framework.get("gpus") else ("none" if run.framework else None))),
        row("jit_compile / torch.compile", compile_setting),
        row("Dtype policy (Keras) / parameter dtypes", dtypes),
        row("Precision flags", precision),
        row("Behaviour variables beyond the suite's defaults", variables),
    ]
    return tabulate([r for r in rows if r], headers=["", *[BACKENDS[b].display for b in backends]], tablefmt="github", disable_numparse=True)


# ---------------------------------------------------------------- derived findings and the comparison


def speedups(rows: list[RowFacts], base: Callable[[RowFacts], float | None]) -> dict[str, list[float]]:
    """Per model: base_ms / Keras 3 (best) ms of every row that has both (a throughput speedup at equal batch)."""
    out: dict[str, list[float]] = {}
    for f in rows:
        b = base(f)
        if b is not None and f.best_ms:
            out.setdefault(f.key.model, []).append(b / f.best_ms)
    return out


def published_keras2(key: RowKey) -> float | None:
    return read_published()[1].get(key, {}).get("keras2")


def published_facts() -> list[RowFacts]:
    _, table = read_published()
    facts = []
    for key, values in table.items():
        keras3 = {b: values[b] for b in KERAS3 if values[b] is not None}
        facts.append(RowFacts(key, {}, keras3, winners_of(keras3)))
    return facts


def mean_text(values: list[float] | None, total: int | None = None) -> str:
    if not values:
        return "—"
    n = len(values)
    rows = f"{n} row{'s' if n != 1 else ''}" + (f" of {total}" if total and total != n else "")
    return f"{fmt_x(statistics.fmean(values))} ({rows})"


def win_summary(rows: list[RowFacts]) -> str:
    contested = [f for f in rows if len(f.keras3_ms) >= 2]
    if not contested:
        return "no row has two Keras 3 backends with a number, so no winner is decided"
    wins = Counter(b for f in contested for b in f.winners)
    tally = ", ".join(f"{SHORT[b]} {n}" for b, n in sorted(wins.items(), key=lambda kv: (-kv[1], KERAS3.index(kv[0]))))
    single = [b for b in KERAS3 if wins.get(b) == len(contested)]
    verdict = f"{SHORT[single[0]]} wins every row" if single else "no single backend wins every row"
    return f"{verdict} (rows won, of the {len(contested)} with ≥2 Keras 3 numbers; a tie counts for each tied backend: {tally})"


def findings(group: Group, rows: list[RowFacts]) -> list[str]:
    paper = group.profile == "paper"
    pub = published_facts() if paper else []
    pub_k2 = speedups(pub, lambda f: published_keras2(f.key))
    ours_k2 = speedups(rows, lambda f: f.ms(Column("keras2", "default")))
    ours_native = {c.variant: speedups(rows, lambda f, c=c: f.ms(c)) for c in NATIVE}
    models = [m for m in MODELS if any(f.key.model == m for f in rows)]
    headers = ["Model", f"{BEST} over Keras 2, ours"]
    if paper:
        headers.append(f"{BEST} over Keras 2, published")
    headers += [f"{BEST} over native PyTorch ({v}), ours" for v in ours_native]
    if paper:
        headers.append("over native PyTorch, published")
    body = []
    for m in models:
        total = sum(1 for f in rows if f.key.model == m)
        line = [get_model(m).display, mean_text(ours_k2.get(m), total)]
        if paper:
            line.append(mean_text(pub_k2.get(m)))
        line += [mean_text(ours_native[v].get(m), total) for v in ours_native]
        if paper:
            line.append("— (not in the published CSV)")
        body.append(line)
    if not paper and not any(ours_k2.values()) and not any(v for d in ours_native.values() for v in d.values()):
        return [
            "No row has both a Keras 3 number and a Keras 2 or native PyTorch number, so no speedup is computed.",
            "",
            f"- Single fastest Keras 3 backend, ours: {win_summary(rows)}.",
        ]
    lines = [
        "Throughput speedup per row = the other column's ms/step ÷ Keras 3 (best) ms/step (same batch size, so the ratio of "
        "steps/s); per model, the arithmetic mean of its rows' speedups (as the published Figure 1 averages per model). "
        ">1 means Keras 3 (best) is faster. Ours use the medians of the table above.",
        "",
        tabulate(body, headers=headers, tablefmt="github", disable_numparse=True),
        "",
        f"- Single fastest Keras 3 backend, ours: {win_summary(rows)}.",
    ]
    if paper:
        lines.append(f"- Single fastest Keras 3 backend, published: {win_summary(pub)}.")
    return lines


def comparison(group: Group, rows: list[RowFacts]) -> list[str]:
    note, table = read_published()
    matched = [f for f in rows if f.key in table]
    lines = [
        f"Published figures: {PUBLISHED_HARDWARE}, paper settings. Source note of `bench/data/{REFERENCE_CSV.name}`:",
        "",
        *[f"> {n}" for n in note],
        "",
    ]
    if not any("A100" in g.get("name", "") for l in group.items for g in (l.result.provenance.get("machine") or {}).get("gpus") or []):
        lines += [f"These results were measured on {group.machine}, not on the published {PUBLISHED_HARDWARE}: every ratio includes the hardware difference.", ""]
    if not matched:
        return lines + ["None of these rows has the published batch size, so there is nothing to compare cell by cell.", ""]
    ok = [l.result.summary() for f in matched for l in f.cells.values() if l.result.status == "ok"]
    gap = max((abs(s.mean / s.median - 1) for s in ok if s.median > 0), default=0.0)
    headers = ["Model / task", "Batch", *[BACKENDS[b].display for b in PUBLISHED_COLUMNS], BEST]
    body = []
    for f in matched:
        pub = table[f.key]
        unit = row_unit(f)[0]
        line = [f.key.label() + (f" ({unit})" if unit else ""), str(f.key.batch_size)]
        for b in PUBLISHED_COLUMNS:
            loaded = f.cells.get(Column(b, "default"))
            line.append(ratio_cell(loaded, pub[b]))
        pub_best = min((v for b, v in pub.items() if b in KERAS3 and v is not None), default=None)
        line.append(f"{f.best_ms / pub_best:.2f} ({fmt_ms(f.best_ms)} / {fmt_ms(pub_best)})" if f.best_ms and pub_best else "")
        body.append(line)
    lines += [
        "Measured ÷ published ms/step per cell (below 1: faster than published), with (measured / published). The published "
        f"figures are means over 100 steps; ours are medians (in this table our means differ from our medians by at most {gap:.1%}). "
        "The published Keras 3 (PyTorch) figures are eager; its generate rows were slowed by static padding (source note). "
        "The published table labels every figure ms/step; a row measured in another unit (named in its label) is compared with "
        "the published figure of that row as is.",
        "",
        tabulate(body, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]
    return lines


def ratio_cell(loaded: Loaded | None, published: float | None) -> str:
    if loaded is None:
        return "" if published is not None else "(published NA)"
    if loaded.result.status != "ok":
        return STATUS_TEXT.get(loaded.result.status, loaded.result.status) + ("" if published is not None else " (published NA)")
    ours = loaded.result.summary().median
    if published is None:
        return f"— ({fmt_ms(ours)} / NA)"
    return f"{ours / published:.2f} ({fmt_ms(ours)} / {fmt_ms(published)})"


# ---------------------------------------------------------------- figures


def draw_figures(group: Group, rows: list[RowFacts], fig_dir: Path) -> dict[str, Path | None]:
    """The three PNGs of one table; None where there is nothing to draw."""
    try:
        import matplotlib
    except ImportError:
        raise BenchError("matplotlib is needed to draw the figures; build the tools env (`make env-tools`)") from None
    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure

    fig_dir.mkdir(parents=True, exist_ok=True)
    title = f"{group.profile} profile, {group.machine}"
    out: dict[str, Path | None] = {}

    def save(fig, kind: str) -> Path:
        path = fig_dir / f"{group.slug}-{kind}.png"
        fig.savefig(path, format="png", dpi=100, metadata={"Software": None})
        return path

    with matplotlib.style.context("default"), matplotlib.rc_context({"font.size": 9, "svg.hashsalt": "bench"}):
        paper = group.profile == "paper"
        ours = speedups(rows, lambda f: f.ms(Column("keras2", "default")))
        pub = speedups(published_facts(), lambda f: published_keras2(f.key)) if paper else {}
        series = {"ours": ours, **({"published (A100)": pub} if paper else {})}
        subtitle = f"{title}\nper model: the mean of its rows' speedups"
        out["speedup-keras2"] = None
        if ours:
            fig = bar_chart(Figure(figsize=(7, 4)), series, f"Keras 3 (best) throughput speedup over Keras 2\n{subtitle}", ["#1f77b4", "#aaaaaa"])
            out["speedup-keras2"] = save(fig, "speedup-keras2")
        native = {c: speedups(rows, lambda f, c=c: f.ms(c)) for c in NATIVE}
        native = {c: v for c, v in native.items() if v}
        if native:
            named = {f"over native PyTorch ({c.variant})": v for c, v in native.items()}
            colors = [COLORS[(c.backend, c.variant)] for c in native]
            out["speedup-native"] = save(bar_chart(Figure(figsize=(7, 4)), named, f"Keras 3 (best) throughput speedup over native PyTorch\n{subtitle}", colors), "speedup-native")
        else:
            out["speedup-native"] = None
        has_numbers = any(f.ms(c) is not None for f in rows for c in COLUMNS)
        out["per-row"] = save(per_row_chart(Figure(figsize=(max(7, 1.3 * len(rows) + 2), 5)), rows, f"Median time per step, every backend (log scale)\n{title}"), "per-row") if has_numbers else None
    return out


def bar_chart(fig, series: dict[str, dict[str, list[float]]], title: str, colors: list[str]):
    ax = fig.add_subplot()
    models = [m for m in MODELS if any(m in s for s in series.values())]
    width = 0.8 / len(series)
    for i, (name, data) in enumerate(series.items()):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, m in enumerate(models) if m in data]
        ys = [statistics.fmean(data[m]) for m in models if m in data]
        bars = ax.bar(xs, ys, width * 0.95, label=name, color=colors[i])
        ax.bar_label(bars, labels=[f"{y:.2f}×" for y in ys], fontsize=8, padding=2)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(models)), [get_model(m).display for m in models])
    ax.set_ylabel("throughput speedup (×); >1: Keras 3 faster")
    ax.set_ylim(0, max(1.2, max(statistics.fmean(v) for s in series.values() for v in s.values()) * 1.2))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def per_row_chart(fig, rows: list[RowFacts], title: str):
    from matplotlib.ticker import FuncFormatter

    ax = fig.add_subplot()
    ax.set_yscale("log")
    columns = [c for c in COLUMNS if any(c in f.cells for f in rows)]  # only the backends this table has
    values = [f.ms(c) for f in rows for c in columns if f.ms(c) is not None]
    floor, high = min(values) / 3, max(values)
    width = min(0.8 / len(columns), 0.2)
    for i, column in enumerate(columns):
        offset = (i - (len(columns) - 1) / 2) * width
        xs = [j + offset for j, f in enumerate(rows) if f.ms(column) is not None]
        ys = [f.ms(column) for f in rows if f.ms(column) is not None]
        bars = ax.bar(xs, [y - floor for y in ys], width * 0.9, bottom=floor, label=column.header, color=COLORS[(column.backend, column.variant)])
        ax.bar_label(bars, labels=[fmt_ms(y) for y in ys], fontsize=6, rotation=90, padding=2)
        for j, f in enumerate(rows):
            loaded = f.cells.get(column)
            if loaded is not None and loaded.result.status != "ok":
                ax.text(j + offset, floor * 1.1, STATUS_TEXT.get(loaded.result.status, loaded.result.status), rotation=90, ha="center", va="bottom", fontsize=7)
    ax.set_ylim(floor, high * 6)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ticks = []
    for f in rows:
        unit = row_unit(f)[0]
        ticks.append(f"{get_model(f.key.model).display}\n{f.key.task}, batch {f.key.batch_size}" + (f"\n({unit})" if unit else ""))
    ax.set_xticks(range(len(rows)), ticks, fontsize=7)
    ax.set_ylabel("median ms per step (log scale); lower is better")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=7, ncol=3)
    fig.tight_layout()
    return fig


def clear_old_figures(fig_dir: Path, keep: set[Path]) -> None:
    """Remove figures an earlier render wrote for tables that no longer exist (only this module's file names)."""
    if not fig_dir.is_dir():
        return
    for path in fig_dir.glob("*__*-*.png"):
        if path not in keep and any(path.name.endswith(f"-{kind}.png") for kind in FIGURE_KINDS):
            path.unlink()


# ---------------------------------------------------------------- the document


def missing_rows(group: Group, present: set[RowKey]) -> list[str]:
    return [f"{k.label()} (batch {k.batch_size})" for k, _ in expected_rows(group.profile) if k not in present]


def details(rows: list[RowFacts]) -> str:
    headers = ["Model / task", "Batch", "Backend", "Status", "Runs", "Steps", "Median", "Mean", "p10–p90", "CV", "Run-median CV", "First step (ms)", "First step holds", "Steady", "tok/s", "File"]
    body = []
    for f in rows:
        for column in COLUMNS:
            loaded = f.cells.get(column)
            if loaded is None:
                continue
            r = loaded.result
            s = r.summary()
            spread = r.repeat_spread()
            firsts = [run.first_step_ms for run in r.runs if run.first_step_ms is not None]
            body.append(
                [
                    f.key.label(),
                    str(f.key.batch_size),
                    column.header,
                    r.status,
                    str(len(r.runs)),
                    str(s.count) if s else "",
                    f"{fmt_ms(s.median)} {r.unit}" if s else "",
                    fmt_ms(s.mean) if s else "",
                    f"{fmt_ms(s.p10)}–{fmt_ms(s.p90)}" if s else "",
                    f"{s.cv:.1%}" if s else "",
                    f"{spread.cv:.1%}" if spread else "",
                    ", ".join(f"{x:.0f}" for x in firsts),
                    md(joined(run.first_step_contains for run in r.runs) or "not recorded"),
                    md("; ".join(unsteady_reasons(r))) if unsteady_reasons(r) else ("yes" if any(run.steadiness for run in r.runs) else "not checked"),
                    f"{r.tokens_per_s():.1f}" if r.tokens_per_s() else "",
                    f"`{loaded.path}`",
                ]
            )
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


@dataclass
class RenderedGroup:
    lines: list[str]  # the group's whole section of RESULTS.md
    table: list[str]  # its main table and notes, as the README shows them
    figures: dict[str, Path | None]


def render_group(index: int, group: Group, out_dir: Path, fig_dir: Path) -> RenderedGroup:
    rows = [row_facts(k, cells) for k, cells in group.grid().items()]
    notes = Notes()
    table = [main_table(group, rows, notes)]
    if notes.texts:
        table += ["", "Notes:", ""] + [f"{n}. {text}" for n, text in enumerate(notes.texts, 1)]
    lines = [f"## {index}. {group.profile} profile — {group.machine}", "", table[0], ""]
    lines += [f"- {text}" for text in legend(group, rows)]
    lines += table[1:]
    missing = missing_rows(group, {f.key for f in rows})
    if missing:
        lines += ["", f"Published rows not measured in this table: {', '.join(missing)}."]
    lines += ["", f"### {index}.1 Where these numbers come from", "", *provenance_block(group), ""]
    lines += [f"### {index}.2 Derived findings and comparison with the published numbers", ""]
    if group.profile == "paper":
        lines += comparison(group, rows)
    else:
        lines += [
            f"Not compared with the published numbers: the {group.profile} profile runs reduced shapes and batch sizes "
            f"on {group.machine}, so its numbers are not comparable with the published paper settings on {PUBLISHED_HARDWARE}. "
            "The findings below use only this table's numbers, for checking the pipeline end to end.",
            "",
        ]
    lines += findings(group, rows) + [""]
    figures = draw_figures(group, rows, fig_dir)
    captions = {
        "speedup-keras2": "Keras 3 (best) throughput speedup over Keras 2, per model",
        "speedup-native": "Keras 3 (best) throughput speedup over native PyTorch, per model",
        "per-row": "Every backend per row, median ms/step (log scale)",
    }
    lines += [f"### {index}.3 Figures", ""]
    for kind in FIGURE_KINDS:
        path = figures.get(kind)
        if path is None:
            lines.append(f"- {captions[kind]}: not drawn (no row has the numbers it needs).")
        else:
            lines.append(f"- {captions[kind]}: ![{captions[kind]}]({Path(os.path.relpath(path, out_dir)).as_posix()})")
    lines += ["", "<details><summary>Per-cell measurements</summary>", "", details(rows), "", "</details>", ""]
    return RenderedGroup(lines, table, figures)


README_START = "<!-- bench-table:start (written by make table; do not edit) -->"
README_END = "<!-- bench-table:end -->"


def update_readme(readme: Path, results_md: Path, first: Group, rendered: RenderedGroup) -> None:
    """Replace the README's marked section with the first table of RESULTS.md and its per-row figure."""
    text = readme.read_text()
    if text.count(README_START) != 1 or text.count(README_END) != 1:
        raise BenchError(f"{readme} needs exactly one {README_START!r} and one {README_END!r} line for `make table` to fill")
    rel = lambda p: Path(os.path.relpath(Path(p).resolve(), readme.resolve().parent)).as_posix()
    section = [
        README_START,
        "",
        f"**{first.profile} profile — {first.machine}**, {len(first.items)} cells (from [{rel(results_md)}]({rel(results_md)}), "
        "which has the spread, the provenance and the comparison with the published numbers):",
        "",
        *rendered.table,
        "",
    ]
    figure = rendered.figures.get("per-row")
    if figure:
        section += [f"![Every backend per row, median ms/step (log scale)]({rel(figure)})", ""]
    before, rest = text.split(README_START)
    after = rest.split(README_END, 1)[1]
    write_text_atomic(readme, before + "\n".join(section) + "\n" + README_END + after)


def render(results_dir: Path, out: Path, readme: Path | None = None) -> None:
    """Write `out` (Markdown) and <results_dir>/figures/*.png from every current result file; with `readme`, put
    the first table (the paper profile's when there is one) into that file's marked section too."""
    results_dir, out = Path(results_dir), Path(out)
    if tabulate is None:
        raise BenchError("tabulate is needed to render the tables; build the tools env (`make env-tools`)")
    items = load_results(results_dir)  # raises CorruptResult, naming the file, before anything is written
    # Archived results stay readable forever: a cell today's registry no longer has is listed, not tabled.
    retired = [(item, why) for item in items if (why := item.result.cell.why_not_in_registry())]
    items = [item for item in items if not item.result.cell.why_not_in_registry()]
    out_dir = out.resolve().parent
    fig_dir = results_dir.resolve() / FIGURES
    lines = ["# Benchmark results", ""]
    written: list[Path] = []
    if not items:
        lines += [
            "No results yet: there are no result files in the results folder.",
            "",
            "Run cells with `make bench BACKEND=<backend> MODEL=<model>` (or `make bench-all`), then `make table`.",
            "",
        ]
    else:
        groups = group_results(items)
        lines += [
            f"Rendered by `python -m bench table` from {len(items)} result file{'s' if len(items) != 1 else ''}: one table per profile "
            "and machine, never mixing hardware or profiles. Published reference: Keras 3 benchmarks, Table 2 "
            f"(`bench/data/{REFERENCE_CSV.name}`).",
            "",
        ]
        lines += [f"{i}. {g.profile} profile — {g.machine} ({len(g.items)} cells)" for i, g in enumerate(groups, 1)] + [""]
        rendered = [render_group(i, group, out_dir, fig_dir) for i, group in enumerate(groups, 1)]
        for r in rendered:
            lines += r.lines
            written += [p for p in r.figures.values() if p]
    if retired:
        lines += ["## Results of cells no longer in the registry", "", "Kept and readable, but not tabled: today's registry (models, tasks, profiles) no longer has their cells.", ""]
        lines += [f"- `{item.path}`: {md(why)}" for item, why in retired] + [""]
    clear_old_figures(fig_dir, set(written))
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    if readme is not None and items:
        update_readme(readme, out, groups[0], rendered[0])


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
