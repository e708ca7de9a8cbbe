"""The tuning study's section: the study's workloads per backend, each tuning variant as a ratio to its
backend's reference variant with its 95% interval and a verdict (faster, slower, same, inconclusive), and each published
finding (bench/data/keras3_tuning_2024.csv) beside ours, holding, not holding or inconclusive by that interval.

Reads the table's loaded results only; returns no lines for a table without study models or tuning variants, so
every other table's output is unchanged. `render()` also writes the section alone to TUNING.md beside RESULTS.md.
"""
from __future__ import annotations

import csv
import datetime
from dataclasses import dataclass
from functools import cache

from bench.base.published import DATA_DIR
from bench.base.stats import FASTER, SAME, SLOWER, Ratio, verdict
from bench.base.tables import github_table
from bench.catalogue.profiles import get_profile
from bench.catalogue.registry import get_model
from bench.catalogue.variants import is_tuning, reference_variant, tuning_variant
from bench.judge import Judge, claims
from bench.judge.analysis import TableAnalysis
from bench.record.load import Loaded
from bench.record.text import fmt_ms, md
from bench.report.sections import Page, Section

TUNING_CSV = DATA_DIR / "keras3_tuning_2024.csv"
PUBLISHED_HARDWARE = "one NVIDIA L4"


@cache
def published_findings() -> tuple[dict[str, str], ...]:
    with TUNING_CSV.open() as f:
        return tuple(csv.DictReader(line for line in f if not line.startswith("#")))


def is_study_item(item: Loaded) -> bool:
    cell = item.result.cell
    return bool(cell.spec.study) or is_tuning(cell.variant)


@dataclass(frozen=True)
class Figure:
    item: Loaded

    @property
    def ms(self) -> float | None:
        r = self.item.result
        return r.summary().median if r.status == "ok" else None

    @property
    def cv(self) -> float:
        return self.item.result.summary().cv if self.ms is not None else 0.0

    def samples_per_s(self) -> float | None:
        return self.item.result.cell.batch_size / (self.ms / 1000) if self.ms else None


def cells_of(table: TableAnalysis) -> dict[tuple[str, str, str, int, str], Figure]:
    """(backend, model, task, batch, variant) -> the newest result of the table's study cells and their references."""
    out: dict[tuple, Figure] = {}
    for item in table.group.items:
        c = item.result.cell
        key = (c.backend, c.model, c.task, c.batch_size, c.variant)
        if key not in out or item.result.created_at > out[key].item.result.created_at:
            out[key] = Figure(item)
    return out


SAME_SESSION_HOURS = 6.0  # two cells further apart than this were not measured in one session


def hours_apart(a: Figure, b: Figure) -> float:
    created = [datetime.datetime.fromisoformat(f.item.result.created_at) for f in (a, b)]
    return abs((created[0] - created[1]).total_seconds()) / 3600


def variant_ratio(judge: Judge, reference: Figure | None, variant: Figure) -> Ratio | None:
    """variant / reference with the Judge's interval (B / A: above 1 the variant is slower). Undecided where the two
    were measured hours apart: a machine label ("AMD EPYC (2 cores)") can stand for hosts of different speeds at
    different times (seen here: the same ViT fit 2.8x faster ten hours later), so such a ratio is not a variant's
    effect. None unless both cells are ok."""
    if reference is None or reference.ms is None or variant.ms is None:
        return None
    found = claims.judged(judge, reference.item.result, variant.item.result)
    apart = hours_apart(reference, variant)
    if found is not None and apart > SAME_SESSION_HOURS:
        found = found.undecided(f"measured {apart:.0f} h apart")
    return found


def ratio_text(r: Ratio | None) -> str:
    """reference ms / variant ms (above 1: the variant is faster), with its interval where it can decide."""
    return claims.ours(r.inverse()) if r is not None else "—"


def workload_cells(model: str, task: str, batch: int, backend: str, variant: str, fig: Figure) -> list[str]:
    """A row's first columns in both tables: the workload, batch, backend, variant and its median ms/step ± CV."""
    value = f"{fmt_ms(fig.ms)} ±{fig.cv * 100:.1f}%" if fig.ms is not None else fig.item.result.status
    return [f"{get_model(model).display} {task}", str(batch), backend, variant, value]


def workloads_table(cells: dict[tuple, Figure]) -> list[str]:
    rows = []
    for (backend, model, task, batch, variant), fig in sorted(cells.items()):
        if not get_model(model).study or is_tuning(variant):
            continue
        sps = fig.samples_per_s()
        rows.append(
            [
                *workload_cells(model, task, batch, backend, variant, fig),
                f"{sps:.2f}" if sps else "",
                f"`{fig.item.path}`",
            ]
        )
    if not rows:
        return []
    return [
        "The study's workloads at each backend's reference variant (median ms/step ± CV; samples/s = batch / median):",
        "",
        github_table(rows, ["Workload", "Batch", "Backend", "Variant", "ms/step", "samples/s", "File"]),
    ]


def variants_table(cells: dict[tuple, Figure], judge: Judge) -> list[str]:
    rows = []
    for (backend, model, task, batch, variant), fig in sorted(cells.items()):
        if not is_tuning(variant):
            continue
        base = reference_variant(backend)
        reference = cells.get((backend, model, task, batch, base))
        ref_text = (
            f"{fmt_ms(reference.ms)} ({base})" if reference and reference.ms is not None else f"not measured ({base})"
        )
        r = variant_ratio(judge, reference, fig)
        rows.append(
            [
                *workload_cells(model, task, batch, backend, variant, fig),
                ref_text,
                ratio_text(r),
                claims.compared(r) if r is not None else "—",
                f"`{fig.item.path}`",
            ]
        )
    if not rows:
        return []
    return [
        "Each tuning variant against its backend's reference variant on the same workload and batch: ratio = reference "
        "ms / variant ms with its 95% interval (above 1: the variant is faster); the variant is faster or slower where "
        "the interval excludes 1, the same where it lies within ±5% of 1, else inconclusive (with the reason).",
        "",
        github_table(
            rows,
            ["Workload", "Batch", "Backend", "Variant", "ms/step", "Reference ms/step", "Ratio", "Variant is", "File"],
        ),
    ]


def first(cells: dict[tuple, Figure], backend: str, model: str, task: str, variant: str) -> Figure | None:
    """The measured cell of this backend, model, task and variant at the largest batch the table has."""
    found = sorted(
        (
            (k[3], f)
            for k, f in cells.items()
            if k[:3] == (backend, model, task) and k[4] == variant and f.ms is not None
        ),
        key=lambda kv: -kv[0],
    )
    return found[0][1] if found else None


def findings_rows(table: TableAnalysis, cells: dict[tuple, Figure], judge: Judge) -> list[list[str]]:
    """Each published finding with ours where the table has its cells. Ours: a ratio of our cells chosen to answer
    the same question, stated in the row, with its 95% interval; a GPU finding measured here on a CPU says so."""
    on_gpu = any((l.result.provenance.get("machine") or {}).get("gpus") for l in table.group.items)
    hardware = (
        "GPU"
        if on_gpu
        else f"CPU only: the published figure is from {PUBLISHED_HARDWARE}; whether it holds on a GPU is not tested here"
    )
    if get_profile(table.group.profile).shapes_from != "paper" and table.group.profile != "paper":
        hardware = f"{table.group.profile} profile: reduced shapes, not comparable with the published figure"
    vit = lambda backend, variant: first(cells, backend, "vit", "fit", variant)
    # ours: the other cell's ms over the cell of the side a published figure above 1 calls faster (the Judge's B / A)
    ratio_of = lambda claimed_faster, other: claims.judged(judge, claimed_faster.item.result, other.item.result)
    out = []
    for f in published_findings():
        name, config = f["finding"], f["config"]
        ours: Ratio | None = None
        throughput, how = None, "not measured in this table"
        if name == "jax_over_torch_speedup":
            workers = int(config.split()[-1])
            torch_variant = f"loader-workers-{workers}"
            # as published, both fed by a torch DataLoader with these workers; else (workers 0) in-memory data, said so
            jax, torch = (
                vit(b, torch_variant) or (vit(b, "default") if workers == 0 else None) for b in ("jax", "torch")
            )
            if jax and torch:
                ours = ratio_of(jax, torch)
                fed = lambda fig: (
                    "a torch DataLoader" if fig.item.result.cell.variant == torch_variant else "in-memory data"
                )
                how = f"ViT fit, torch ({fed(torch)}) ms / JAX ({fed(jax)}) ms"
        elif name == "sdpa_closes_gap":
            jax, torch = vit("jax", "default"), vit("torch", "sdpa")
            if jax and torch:
                ours, how = ratio_of(jax, torch), "ViT fit, torch with the SDPA attention layer ms / JAX ms"
        elif name == "throughput":
            model = "gemma_2b" if f["model"] == "gemma-2b-lora" else f["model"]
            batch = int(config.split()[-1])
            # the published batch where it ran, else the largest this table has (a CPU runs batch 1), said so
            fig = cells.get((f["backend_a"], model, "fit", batch, "default")) or first(
                cells, f["backend_a"], model, "fit", "default"
            )
            if fig and fig.ms is not None:
                ran = fig.item.result.cell.batch_size
                throughput, how = (
                    fig.samples_per_s(),
                    f"Gemma 2B LoRA fit on {f['backend_a']} at batch {ran}"
                    + ("" if ran == batch else f" (the published batch {batch} did not run here)"),
                )
        elif name == "matmul_precision_high_speedup":
            for model in ("gemma_2b", "vit"):
                base, high = (
                    first(cells, "torch", model, "fit", "default"),
                    first(cells, "torch", model, "fit", "matmul-high"),
                )
                if base and high:
                    ours, how = (
                        ratio_of(high, base),
                        f"{get_model(model).display} fit on Keras's torch backend: default ms / matmul-high ms"
                        + (" (the published finding is Gemma 2B's)" if model != "gemma_2b" else ""),
                    )
                    break
        measured = ours is not None or throughput is not None
        if "not comparable" in hardware:
            holds = "not comparable (reduced shapes)" if measured else "not measured"
        elif f["unit"] != "x":
            holds = "not comparable (a throughput of other hardware)" if measured else "not measured"
        else:
            holds = finding_verdict(f, ours)
        out.append(
            [
                md(name),
                md(f["model"]),
                md(config),
                md(f["value"]) + " " + md(f["unit"]),
                f"{throughput:.2f} samples/s" if throughput is not None else claims.ours(ours) if ours is not None else "",
                holds,
                md(how),
                md(hardware) if measured else "",
            ]
        )
    return out


def side(finding: dict[str, str], ratio: float) -> str:
    """What a speed-up says (above 1: backend_a, or the tuning, faster): faster beyond 5% either way, else equal."""
    a, b = (finding["backend_a"], finding["backend_b"]) if finding["backend_b"] else ("the tuning", "without it")
    return f"{a} faster" if ratio > 1.05 else f"{b} faster" if ratio < 1 / 1.05 else "about equal"


def finding_verdict(finding: dict[str, str], ours: Ratio | None) -> str:
    """Whether ours points the way the published speed-up does, decided by its interval: the published side
    (backend_a faster, backend_b faster, about equal within 5%) holds when our interval shows the same (wholly
    above 1, wholly below 1, wholly within ±5% of 1), does not hold when it shows another, else inconclusive."""
    if ours is None:
        return "not measured"
    # ours is B / A with A the side a published ratio above 1 calls faster: B slower means A faster
    shown = {SLOWER: side(finding, 2.0), FASTER: side(finding, 0.5), SAME: side(finding, 1.0)}.get(verdict(ours))
    if shown is None:
        return claims.compared(ours)
    published = side(finding, float(finding["value"].lstrip("~")))
    return "holds" if shown == published else f"does not hold here (ours: {shown})"


def tuning_section(table: TableAnalysis, page: Page) -> list[str]:
    study = [item for item in table.group.items if is_study_item(item)]
    if not study:
        return []
    every = cells_of(table)
    # The study's cells, and the reference cells its tuning variants are compared with (a published model's too).
    compared = {(*k[:4], reference_variant(k[0])) for k in every if is_tuning(k[4])}
    cells = {k: f for k, f in every.items() if is_study_item(f.item) or k in compared}
    judge = Judge(table.group.results, page.fig_dir.parent)
    lines = workloads_table(cells)
    variants = variants_table(cells, judge)
    if variants:
        lines += ([""] if lines else []) + variants
    lines += [
        "",
        "Published findings (bench/data/keras3_tuning_2024.csv) beside ours (a ratio with its 95% interval; a "
        "speed-up holds where our interval points the same way, beyond 5% or within it):",
        "",
        github_table(
            findings_rows(table, cells, judge),
            ["Finding", "Model", "Published config", "Published", "Ours", "Holds?", "Ours is", "Hardware"],
        ),
    ]
    described = sorted({item.result.cell.variant for item in study if is_tuning(item.result.cell.variant)})
    if described:
        lines += ["", "Variants:", ""] + [f"- `{v}`: {md(tuning_variant(v).what)}" for v in described]
    return lines


PAGE = "TUNING.md"  # beside RESULTS.md: the tuning study's section of every table that has one
SECTIONS = [
    Section("Tuning study: variants and the published findings", tuning_section, page=PAGE,
            intro=("Tuning study", "Tuning variants beside their reference cells and the published findings."),
            link="tuning study"),
]
