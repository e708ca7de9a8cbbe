"""RESULTS.md's generate split: per generate row and backend, time to first token (TTFT), time per
output token (TPOT), decode tokens/s and the agreement check (bench/base/generate_split.py), a figure of TTFT and TPOT
per backend, the published footnote on Keras-on-torch re-tested (padded prefill or decode loop?) and the published
generate findings as "published, ours with its interval, holds / does not hold / inconclusive". A table with no
split (results from before it) gets no lines.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.base.atomic import write_stream_atomic
from bench.base.generate_split import TOLERANCE, result_split
from bench.base.published import published_ms
from bench.base.stats import FASTER, SAME, SLOWER, Ratio, claim_rule, fmt_factor, verdict
from bench.base.tables import github_table
from bench.judge import Judge, claims
from bench.judge.analysis import RowFacts, TableAnalysis
from bench.judge.claims import HOLDS_FACTOR
from bench.record.load import COLUMNS, Column
from bench.record.text import fmt_ms
from bench.report.sections import Page

FIGURE_KIND = "generate-split"
KERAS_TORCH, KERAS_JAX = Column("torch", "default"), Column("jax", "default")
NATIVE_EAGER, NATIVE_COMPILED = Column("native-torch", "eager"), Column("native-torch", "compiled")
GPU_NOTE = (
    "All three are GPU claims (A100; V100 for F. Chollet's): as GPU claims they are not tested on this "
    "hardware. Ours are this machine's ratios at this table's size (its profile): the same ratio re-tested on it."
)


def split_rows(table: TableAnalysis) -> list[tuple[RowFacts, Column, dict]]:
    out = []
    for facts in table.rows:
        if facts.key.task != "generate":
            continue
        for column in COLUMNS:
            loaded = facts.cells.get(column)
            if loaded is not None and loaded.result.status == "ok" and (split := result_split(loaded.result)):
                out.append((facts, column, split))
    return out


def row_name(facts: RowFacts) -> str:
    from bench.catalogue.registry import get_model

    return f"{get_model(facts.key.model).display} batch {facts.key.batch_size}"


def generate_section(table: TableAnalysis, page: Page) -> list[str]:
    rows = split_rows(table)
    if not rows:
        return []
    body = []
    for facts, column, s in rows:
        whole = facts.ms(column)
        agreement = (
            "–" if s["agreement_error"] is None else f"{s['agreement_error']:.1%} {'agrees' if s['agrees'] else 'off'}"
        )
        body.append(
            [
                row_name(facts),
                column.header,
                fmt_ms(whole),
                fmt_ms(s["ttft_ms"]),
                fmt_ms(s["tpot_ms"]),
                f"{s['decode_tokens_per_s']:.1f}" if s["decode_tokens_per_s"] else "–",
                f"{s['prefill_share']:.0%}" if s["prefill_share"] is not None else "–",
                f"{s['prefill_positions']} ({s['prompt_tokens']})",
                agreement,
            ]
        )
    lines = [
        "Each generate call split as LLM users read it (bench/base/generate_split.py): TTFT = a one-new-token call on "
        "the "
        "same prompt, padded length and compiled function; TPOT = (whole call - TTFT) / (new tokens - 1); the "
        "agreement check "
        "predicts the whole call from TTFT and a partial call alone (half the new tokens) and says how far off it is "
        f"(agreement within {TOLERANCE:.0%}). Prefill positions: what the prefill computed per sequence, padding "
        "included "
        "(the prompt's real tokens in brackets).",
        "",
    ]
    lines += [
        github_table(
            body,
            [
                "row",
                "backend",
                "ms/call",
                "TTFT ms",
                "TPOT ms",
                "decode tok/s",
                "prefill share",
                "prefill positions (prompt)",
                "agreement",
            ],
        ),
        "",
    ]
    path = draw_split_figure(table, rows, page.fig_dir)
    if path is not None:
        page.figures[FIGURE_KIND] = path
        caption = "TTFT and TPOT per backend (log scale)"
        lines += [f"![{caption}]({Path(os.path.relpath(path, page.out_dir)).as_posix()})", ""]
    judge = table_judge(table, page)
    lines += footnote_lines(table, judge) + published_lines(table, judge)
    return lines


def table_judge(table: TableAnalysis, page: Page) -> Judge:
    """The Judge over this table's results (its machine's noise study found beside them: the figures' folder's
    parent is the results folder)."""
    return Judge(table.group.results, page.fig_dir.parent)


def footnote_lines(table: TableAnalysis, judge: Judge) -> list[str]:
    """The published footnote: Keras-on-torch's generate is "abnormally slow ... because KerasNLP uses static
    sequence padding". Per row with Keras-on-torch and native eager both split: whether Keras-on-torch is slower with
    confidence, and if so where its extra time goes; "inconclusive" where the two cells cannot be told apart."""
    lines = []
    for facts in table.rows:
        if facts.key.task != "generate":
            continue
        kt, ne = (facts.cells.get(c) for c in (KERAS_TORCH, NATIVE_EAGER))
        if not kt or not ne or kt.result.status != "ok" or ne.result.status != "ok":
            continue
        a, b = result_split(kt.result), result_split(ne.result)
        if not a or not b:
            continue
        whole_a, whole_b = facts.ms(KERAS_TORCH), facts.ms(NATIVE_EAGER)
        r = claims.judged(judge, ne.result, kt.result)  # Keras 3 (PyTorch) / native eager
        extra_prefill = a["ttft_ms"] - b["ttft_ms"]
        extra_decode = (whole_a - a["ttft_ms"]) - (whole_b - b["ttft_ms"])
        cause = "the decode loop" if extra_decode > extra_prefill else "the padded prefill"
        found = verdict(r)
        if found == SLOWER:
            verdict_text = f"**{cause}** makes most of the difference."
        elif found in (SAME, FASTER):
            verdict_text = (f"Keras 3 (PyTorch) is not slower than native eager here ({found}), so there is no "
                            "slowness to explain.")
        else:
            verdict_text = f"{claims.compared(r)}, so neither part is blamed."
        lines.append(
            f"- {row_name(facts)}: Keras 3 (PyTorch) takes {fmt_ms(whole_a)} ms a call against native eager's "
            f"{fmt_ms(whole_b)}, {claims.ours(r)} as long; its prefill computes {a['prefill_positions']} positions "
            f"(native: {b['prefill_positions']}) and takes {fmt_ms(a['ttft_ms'])} ms ({more(extra_prefill)}), "
            f"its decode {fmt_ms(whole_a - a['ttft_ms'])} ms "
            f"({more(extra_decode)}; TPOT {fmt_ms(a['tpot_ms'])} against {fmt_ms(b['tpot_ms'])}): {verdict_text}"
        )
    if not lines:
        return []
    return (
        [
            "The published footnote re-tested (Keras-on-torch generate \"abnormally slow ... because KerasNLP uses "
            "static "
            "sequence padding\"): is it the padded prefill or the decode loop? (Keras 3 (PyTorch) / native eager as a "
            "ratio with its 95% interval; a part is blamed only where Keras 3 (PyTorch) is slower with confidence.)",
            "",
        ]
        + lines
        + [""]
    )


def more(ms: float) -> str:
    return f"{fmt_ms(ms)} more" if ms >= 0 else f"{fmt_ms(-ms)} less"


def cell_ratio(judge: Judge, facts: RowFacts, numerator: Column, denominator: Column) -> Ratio | None:
    """numerator / denominator of this row's two cells with the Judge's interval; None unless both are ok."""
    a, b = facts.cells.get(denominator), facts.cells.get(numerator)
    if a is None or b is None:
        return None
    return claims.judged(judge, a.result, b.result)


def published_lines(table: TableAnalysis, judge: Judge) -> list[str]:
    """Table 2's Keras-on-torch / Keras-on-JAX generate ratio, keras-hub #2593's 4.5x and F. Chollet's "over twice
    the throughput of HF PyTorch compiled", each beside this table's ratio with its interval and a verdict from it."""
    published = {(model, batch): ms for (model, task, batch), ms in published_ms().items() if task == "generate"}
    body = []
    for facts in table.rows:
        if facts.key.task != "generate":
            continue
        ours = cell_ratio(judge, facts, KERAS_TORCH, KERAS_JAX)
        batch = facts.published_batch or facts.key.batch_size
        figures = published.get((facts.key.model, batch)) or {}
        if figures.get("torch") and figures.get("jax"):
            claimed = figures["torch"] / figures["jax"]
            body.append(
                [
                    f"Table 2: Keras-torch / Keras-JAX generate, {facts.key.model} batch {batch} (A100)",
                    fmt_factor(claimed),
                    claims.ours(ours),
                    claims.within(ours, claimed, HOLDS_FACTOR),
                ]
            )
        body.append(
            [
                f"keras-hub #2593: CausalLM.generate 4.5x slower on torch than JAX ({row_name(facts)})",
                fmt_factor(4.5),
                claims.ours(ours),
                claims.within(ours, 4.5, HOLDS_FACTOR),
            ]
        )
        if facts.key.model == "mistral":
            compiled = cell_ratio(judge, facts, NATIVE_COMPILED, KERAS_JAX)
            body.append(
                [
                    "F. Chollet 2024: KerasNLP-JAX over 2x the throughput of HF PyTorch compiled "
                    f"(V100, float16, batch 10; here {row_name(facts)})",
                    f"> {fmt_factor(2)}",
                    claims.ours(compiled),
                    claims.above(compiled, 2.0),
                ]
            )
    if not body:
        return []
    return [
        f"The published generate findings, ours from this table as a ratio with its 95% interval (a ratio holds when "
        f"our whole interval lies {claim_rule(HOLDS_FACTOR)}, does not hold when it lies wholly outside that, else "
        f"inconclusive){size_note(table)}:",
        "",
        github_table(body, ["finding", "published", "ours", "verdict"]),
        "",
        GPU_NOTE,
        "",
    ]


def size_note(table: TableAnalysis) -> str:
    """The size this table's generate rows ran at, where its profile cuts a model's layers (cpu-mid): the findings'
    figures are ratios at that size, which a reader must know."""
    from bench.catalogue.registry import get_model
    from bench.catalogue.work import work_rule

    cut = []
    for model in dict.fromkeys(f.key.model for f in table.rows if f.key.task == "generate"):
        spec = get_model(model)
        shape, paper = spec.shape(table.group.profile), spec.shape("paper")
        if getattr(shape, "num_layers", None) != getattr(paper, "num_layers", None):
            params = (rule := work_rule(model)) and rule.parameters(shape)
            cut.append(
                f"{spec.display} {shape.num_layers} of its {paper.num_layers} layers"
                + (f" ({fmt_parameters(params)} parameters)" if params else "")
            )
    if not cut:
        return ""
    return (
        f"; at {', '.join(cut)}, every width, the prompt and the generate length the paper's: the largest size "
        "every compared column fits on this machine (`python -m bench largest`)"
    )


def fmt_parameters(count: int) -> str:
    """2.45B, 146K: three significant digits at the count's own scale."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            return f"{count / scale:.3g}{suffix}"
    return str(count)


def draw_split_figure(table: TableAnalysis, rows: list[tuple[RowFacts, Column, dict]], fig_dir: Path) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    by_row: dict[str, list[tuple[Column, dict]]] = {}
    for facts, column, split in rows:
        by_row.setdefault(row_name(facts), []).append((column, split))
    fig = Figure(figsize=(max(7, 3.2 * len(by_row)), 4))
    for i, (name, cells) in enumerate(by_row.items(), 1):
        ax = fig.add_subplot(1, len(by_row), i)
        x = range(len(cells))
        for offset, key, label, hatch in ((-0.2, "ttft_ms", "TTFT", None), (0.2, "tpot_ms", "TPOT", "//")):
            values = [max(s[key] or 0, 1e-3) for _, s in cells]
            ax.bar(
                [j + offset for j in x],
                values,
                width=0.4,
                color=[c.color for c, _ in cells],
                hatch=hatch,
                label=label,
                edgecolor="black",
                linewidth=0.5,
            )
        ax.set_yscale("log")
        ax.set_xticks(list(x), [c.header for c, _ in cells], rotation=45, ha="right", fontsize=7)
        ax.set_title(name, fontsize=9)
        if i == 1:
            ax.set_ylabel("ms (TTFT plain, TPOT hatched)")
    fig.suptitle(f"Time to first token and time per output token\n{table.group.title}", fontsize=9)
    fig.tight_layout()
    fig_dir.mkdir(parents=True, exist_ok=True)
    path = fig_dir / f"{table.group.slug}-{FIGURE_KIND}.png"
    write_stream_atomic(path, lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": None}))
    return path
