"""The machine's noise study in words (`make noise`, bench/studies/noise/run.py): <results>/noise/NOISE.md from the
study files beside it (one per processor), and the section of RESULTS.md that says how small a difference the table's
machine can show (`noise_section`, registered in bench/studies/table.py SECTIONS).

Everything here is read from the study's JSON (format noise-1); nothing is measured. A rate (pairs called different,
pairs called slower) is given with its 95% Clopper-Pearson interval (scipy.stats.binomtest), and a minimum detectable
effect with the design it holds for: inside one invocation (both sides interleaved: what an interleaved re-run gets)
or across separate runs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench.base.provenance import machine_label
from bench.base.stats import FASTER, INCONCLUSIVE, SAME, SLOWER, fmt_factor
from bench.base.tables import github_table
from bench.judge.noise_file import (
    NOISE_DIR,
    NOISE_FORMAT,
    find_noise_file,
    read_noise_file,
    readable_studies,
    run_spread_of,
)
from bench.record import text
from bench.record.text import write_text_atomic
from bench.report.sections import LABEL_MATCH_NOTE, Section

PAGE = "NOISE.md"
TITLE = "How small a difference this machine can show"
VERDICTS = (FASTER, SLOWER, SAME, INCONCLUSIVE)


def load_studies(results_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every current study file of <results>/noise/ (not history/, not a run's own copy), by name; a file that is
    not a noise study raises, naming itself."""
    folder = Path(results_dir) / NOISE_DIR
    paths = sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")) if folder.is_dir() else []
    return [(p, read_noise_file(p)) for p in paths]


def pct(value: float | None, sign: bool = False) -> str:
    """A share in percent to three significant digits (2.31%, +6.26%; a machine under load can reach 1e+03%)."""
    if value is None:
        return "–"
    return f"{value * 100:{'+' if sign else ''}.3g}%"


CONFIDENCE = 0.95  # the binomial intervals' level
INTERLEAVED = "inside one invocation (both sides interleaved; an interleaved re-run of both sides gets the same)"


def binomial_interval(hits: int, pairs: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval of a rate seen as `hits` of `pairs`, were the pairs independent."""
    from scipy.stats import binomtest

    found = binomtest(hits, pairs).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return found.low, found.high


def rate_text(hits: int, pairs: int) -> str:
    """'0% (at most 20.6% at 95%, Clopper-Pearson)': a rate with its binomial bound; '–' for no pairs."""
    if not pairs:
        return "–"
    low, high = binomial_interval(hits, pairs)
    bound = f"at most {pct(high)}" if hits == 0 else (f"at least {pct(low)}" if hits == pairs
                                                       else f"{pct(low)}–{pct(high)}")
    return f"{pct(hits / pairs)} ({bound} at {CONFIDENCE:.0%}, Clopper-Pearson)"


def pair_text(pair: dict[str, Any]) -> str:
    """'same 1.01× (0.982–1.04)': a verdict with B / A and its interval."""
    verdict = pair.get("verdict") or "not compared"
    if pair.get("ratio") is None:
        return verdict
    interval = (f" ({fmt_factor(pair['low'], unit='')}–{fmt_factor(pair['high'], unit='')})"
                if pair.get("low") is not None and pair.get("high") is not None else "")
    return f"{verdict} {fmt_factor(pair['ratio'])}{interval}"


def processor_text(data: dict[str, Any]) -> str:
    processor = data.get("processor") or {}
    if not processor:
        return "processor not recorded"
    flags = processor.get("flags") or []
    vector = ", ".join(f for f in flags if f.startswith(("avx", "amx", "sve", "asimd"))) or "none listed"
    return (f"{processor.get('model_name') or 'unnamed'} (family {processor.get('family')}, model "
            f"{processor.get('model')}, stepping {processor.get('stepping')}; vector extensions: {vector}; "
            f"fingerprint {str(processor.get('fingerprint'))[:12]})")


def commit_text(data: dict[str, Any]) -> str:
    git = (data.get("provenance") or {}).get("git") or {}
    commit = str(git.get("commit") or "unknown")[:12]
    return f"`{commit}`" + (" (with uncommitted changes)" if git.get("dirty") else "")


def conditions_text(data: dict[str, Any]) -> str:
    c = data.get("conditions") or {}
    load, drift = c.get("load_1m") or {}, c.get("drift_probe_ms") or {}
    others = c.get("others_busy_cores")
    parts = [
        f"**{c.get('label', 'conditions not recorded')}**",
        f"1-minute load average {load.get('start')} at the start and {load.get('end')} at the end (the study's own "
        "processes included)",
    ]
    if others is not None:
        parts.append(f"other processes kept {others:.2f} of {c.get('cpus')} cores busy on average while it ran")
    if drift.get("start") and drift.get("end"):
        parts.append(f"drift probe {drift['start']:.3g} ms at the start, {drift['end']:.3g} ms at the end")
    limit = c.get("load_limit")
    if limit is not None:
        parts.append(f"a load (the cores other processes kept busy; the load average where those are not "
                     f"recorded) above {limit:g} counts as load")
    return "; ".join(parts)


def settings_text(data: dict[str, Any]) -> str:
    s = data.get("settings") or {}
    rule = s.get("sampling") or {}
    if rule.get("target_half_width"):
        sampling = (f"each process timed until its median's 95% interval was within ±{rule['target_half_width']:.0%} "
                    f"(at least {rule.get('min_steps')} steps and {rule.get('min_s')} s, at most "
                    f"{rule.get('max_steps')} steps or {rule.get('max_s')} s)")
    else:
        sampling = f"{rule.get('max_steps')} timed steps per process"
    return (f"profile `{s.get('profile')}`, {s.get('repeats')} processes a side interleaved "
            f"{s.get('order')}{added_processes(s)}, {s.get('rounds')} round(s) over {len(s.get('cells') or [])} "
            f"cell(s), {sampling}; verdicts at "
            f"{s.get('confidence', 0.95):.0%} confidence, same within ±{s.get('equivalence_band', 0.05):.0%}")


def added_processes(settings: dict[str, Any]) -> str:
    """The sequential rule a study's pairs ran under (bench/judge/replication.py), where it added processes; empty for a
    fixed count (a study written before it was recorded, or a profile without one)."""
    rule = settings.get("replication") or {}
    if not rule or rule.get("cap", 0) <= rule.get("first", 0):
        return ""
    return (f", then one more a side after each look while the pair was undecided and its cap could decide it, up to "
            f"{rule['cap']} (as `make bench-all MAX_PROCESSES={rule['cap']}` adds them; each of the {rule['looks']} "
            f"looks judged at {rule['confidence']:.2%})")


def aa_lines(data: dict[str, Any]) -> list[str]:
    aa, s = data["aa"], data.get("settings") or {}
    wrong = aa[FASTER] + aa[SLOWER]
    rounds = s.get("rounds") or 1
    cells = len(data.get("cells") or [])
    lines = [
        f"Identical code, run into two folders and compared by `make compare`'s verdicts: **{wrong} of {aa['pairs']} "
        f"pairs called different**: "
        + ", ".join(f"{aa[v]} {v}" for v in VERDICTS)
        + (f", {aa['not compared']} not compared (a side not ok)" if aa.get("not compared") else "")
        + f". A false-positive rate of {rate_text(wrong, aa['pairs'])}; that interval counts the pairs as independent, "
        f"and they are not: they are {cells} cell(s) in {rounds} round(s) of one invocation, which share the "
        "machine's state (its level over those minutes), so the rate's true bound is wider.",
        "",
    ]
    headers = ["cell", *[f"round {k}" for k in range(1, rounds + 1)], "processes", "spread (sd of ln median)",
               f"MDE inside one invocation, {s.get('repeats')} a side (80% power)"]
    body = []
    for cell in data.get("cells") or []:
        by_round = {r["round"]: r for r in cell.get("rounds") or []}
        body.append([
            text.md(cell["cell"]),
            *[text.md(pair_text(by_round[k])) if k in by_round else "" for k in range(1, rounds + 1)],
            str(cell.get("processes")),
            pct(cell.get("log_sd")) + (f" (dof {cell['dof']})" if cell.get("dof") else ""),
            pct(cell.get("mde"), sign=True),
        ])
    lines += [github_table(body, headers), ""]
    reasons = sorted({r.get("reason") for c in data.get("cells") or [] for r in c.get("rounds") or []
                      if r.get("verdict") in (INCONCLUSIVE, None) and r.get("reason")})
    if reasons:
        lines += ["Why a pair was inconclusive:", ""] + [f"- {text.md(r)}" for r in reasons] + [""]
    return lines


def spread_lines(data: dict[str, Any]) -> list[str]:
    spread = data.get("process_spread")
    if not spread:
        return ["No cell had two processes that finished: no process-to-process spread was measured.", ""]
    pooled = spread.get("pooled_log_sd")
    return [
        f"The machine's process-to-process spread, **{pct(spread['log_sd'])}** (the standard deviation of ln(a "
        f"process's median), {spread.get('dof')} degrees of freedom; cell `{spread.get('cell')}`): {spread['how']}. "
        + (f"Pooled over every cell: {pct(pooled)} ({spread.get('pooled_dof')} degrees of freedom). " if pooled else "")
        + "A cell of one process (the cpu profiles) borrows it for its interval. The A/A table's MDE column is the "
        f"slowdown a comparison {INTERLEAVED} detects at a cell's spread; across separate runs, see the run-to-run "
        "spread below.",
        "",
    ]


def gated(power: dict[str, Any]) -> int:
    """The inconclusive pairs of a slowdown that a noise gate kept out of a verdict (a side measured while the machine
    was disturbed), as against those whose interval was too wide."""
    outcomes = power.get("outcomes") or []
    return sum(1 for o in outcomes if o.get("verdict") == INCONCLUSIVE and "noisy" in (o.get("reason") or ""))


def power_lines(data: dict[str, Any]) -> list[str]:
    power, s = data.get("power") or [], data.get("settings") or {}
    probe = s.get("probe") or {}
    mde = (data.get("mde") or {}).get("calibration") or {}
    lines = [
        f"The calibration probe (bench/studies/noise/worker.py): a pure-Python loop of {probe.get('base_iterations')} "
        f"turns per "
        f"step (about {probe.get('target_step_ms')} ms), against itself with each step's work multiplied by 1 + the "
        f"slowdown, {s.get('repeats')} processes a side interleaved{added_processes(s)}; "
        f"judged by the same statistics and noise gates. "
        "At 0 the right verdict is same (or inconclusive); above 0 slower, or inconclusive under load; same or "
        "faster is wrong.",
        "",
    ]
    lines += power_table(power)
    if mde.get("slowdown") is not None:
        found = next((p for p in power if p.get("slowdown") == mde["slowdown"]), None)
        rate = (f" There {found.get(SLOWER, 0)} of {found['pairs']} pairs were called slower: a rate of "
                f"{rate_text(found.get(SLOWER, 0), found['pairs'])}." if found else "")
        lines.append(f"**Minimum detectable effect inside one invocation: +{mde['slowdown']:.0%}** ({mde.get('rule')})."
                     f"{rate} It holds {INTERLEAVED}, the probe's pairs being interleaved in this one invocation; "
                     "it is not what a comparison of separate runs detects (the run-to-run spread above).")
    else:
        lines.append(f"**Minimum detectable effect inside one invocation: none found**: "
                     f"{mde.get('note') or 'no power test ran'}.")
    per_cell = (data.get("mde") or {}).get("per_cell") or {}
    if per_cell:
        values = sorted(v["mde"] for v in per_cell.values())
        how = (data.get("mde") or {}).get("per_cell_how")
        lines += [
            "",
            f"On the product cells, the analytic minimum detectable effect {INTERLEAVED} at 80% power ({how}) "
            f"runs from {pct(values[0], sign=True)} to {pct(values[-1], sign=True)} (per cell in the A/A table above).",
        ]
    return lines + [""]


def called_rate(p: dict[str, Any]) -> str:
    """A power row's rate: at +0% the pairs called different, above it those called slower, with its bound."""
    if p["slowdown"] == 0:
        return "different: " + rate_text(p.get(FASTER, 0) + p.get(SLOWER, 0), p["pairs"])
    return "slower: " + rate_text(p.get(SLOWER, 0), p["pairs"])


def power_table(power: list[dict[str, Any]]) -> list[str]:
    body = [
        [f"+{p['slowdown']:.0%}", str(p["pairs"]), *[str(p.get(v, 0)) for v in VERDICTS], str(gated(p)),
         str(p.get("wrong", 0)), called_rate(p)]
        for p in power
    ]
    if not body:
        return []
    headers = ["slowdown", "pairs", *VERDICTS, "of which a noise gate", "wrong", "rate called"]
    return [github_table(body, headers), "",
            "Each row's pairs ran in one invocation, back to back: the intervals, which count them as independent, "
            "are too narrow by what they share.", ""]


def loaded_power_lines(data: dict[str, Any]) -> list[str]:
    """The same probe pairs beside busy loops (`make noise LOAD=N`), where the study ran them."""
    loaded = data.get("power_under_load")
    if not loaded:
        return []
    reference = loaded.get("reference_ms") or {}
    return [
        f"### Power under load: {loaded['busy_processes']} busy loops beside the probe",
        "",
        f"The same pairs while {loaded['busy_processes']} pure-Python loops spun on the cores (`make noise "
        f"LOAD={loaded['busy_processes']}`; 1-minute load average {loaded.get('load_1m_start')} at the start and "
        f"{loaded.get('load_1m_end')} at the end, the drift probe {reference.get('min', 0):.3g}–"
        f"{reference.get('max', 0):.3g} ms). Under load, inconclusive is a right answer; same or faster for a "
        "slowdown, and faster or slower at +0%, are wrong.",
        "",
        *power_table(loaded.get("power") or []),
    ]


def detection_lines(data: dict[str, Any]) -> list[str]:
    """Power on product cells: each cell's delayed pairs, inside a run and across runs."""
    rows = data.get("detection") or []
    if not rows:
        return []
    settings = data.get("settings") or {}
    lines = [
        "### Power on product cells: a real per-step delay",
        "",
        f"Side B's every timed step held for a share of its own length after its work (the test fixture "
        f"`tests/fixtures/step_delay`), against the same cell untouched; {settings.get('pairs')} pairs of "
        f"{settings.get('repeats')} + {settings.get('repeats')} processes a cell{added_processes(settings)}, each pair "
        "its own run. Inside a "
        "run: A and B of one pair, interleaved. Across runs: A of one pair against B of the next, minutes apart, "
        "judged as `make compare` judges separate runs (the machine's run-to-run spread added). Several runs a side: "
        "A of the first half of the pairs against B of the second half and the other way round, each side its runs "
        "pooled as `make compare A=a1,a2,... B=b1,b2,...` pools them (the runs' spread carried over their number). "
        "Slower is right, inconclusive a miss, same or faster wrong.",
        "",
    ]
    k = max((row.get("pooled") or {}).get("runs_a_side", 0) for row in rows)
    pooled_head = f" across runs, {k} a side: slower / missed / wrong |" if k else ""
    lines += [
        "| cell | delay | inside a run: slower / missed / wrong | across runs: slower / missed / wrong |" + pooled_head,
        "|---|---|---|---|" + ("---|" if k else ""),
    ]

    def counts(c: dict[str, Any]) -> str:
        return (f"{c['detected']} / {c['missed']} / {c['wrong']} of {c['pairs']}"
                + (f"; slower {rate_text(c['detected'], c['pairs'])}" if c["pairs"] else ""))

    for row in rows:
        w, a, p = row["within"], row["across"], row.get("pooled") or {}
        lines.append(f"| {row['cell']} | +{row['share']:.0%} | {counts(w)} | {counts(a)} |"
                     + (f" {counts(p)} |" if k else ""))
    lines += ["", "The pairs of a cell ran back to back in one invocation, and each across-run pair shares its folders "
              "with the next: the rates' intervals count the pairs as independent, so they are too narrow by what "
              "the pairs share."]
    misses = [(row, kind, p) for row in rows for kind, ps in (("inside", [x["within"] for x in row["pairs"]]),
              ("across", row["across_pairs"]), (f"{k} runs a side", row.get("pooled_pairs") or []))
              for p in ps if p.get("verdict") != SLOWER]  # fmt: skip
    if misses:
        lines += ["", "Each pair not called slower, and why:", ""]
        lines += [
            f"- {row['key']} +{row['share']:.0%} ({kind}): {p.get('verdict') or 'not compared'}"
            + (f" {fmt_factor(p['ratio'])} ({p['low']:.3g}–{p['high']:.3g})" if p.get("low") else "")
            + (f": {p['reason']}" if p.get("reason") else "")
            for row, kind, p in misses
        ]
    return [*lines, ""]


def render_partial(runs_dir: Path, data: dict[str, Any]) -> Path:
    """A study that ran only some parts (not the machine's study): <runs_dir>/STUDY.md; returns its path."""
    machine = data.get("machine") or {}
    lines = [
        f"# A partial noise study ({', '.join(data.get('parts') or [])}) on {machine_label(machine)}",
        "",
        f"{processor_text(data)}. Measured {data.get('created_at')} to {data.get('finished_at')} at commit "
        f"{commit_text(data)}; the machine: {conditions_text(data)}. Not the machine's study "
        "(`make noise` with every part writes that): its figures stay here, beside its runs.",
        "",
    ]
    if data.get("aa", {}).get("pairs"):
        lines += ["## A/A: the same code against itself", ""] + aa_lines(data)
    if (data.get("power") or []):
        lines += ["## Power: a known slowdown", ""] + power_lines(data)
    lines += [line.replace("### ", "## ", 1) for line in detection_lines(data)]
    out = Path(runs_dir) / "STUDY.md"
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out


RUNS_A_SIDE = (1, 2, 4)  # the runs a side the MDE across runs is given for


def run_spread_lines(path: Path, data: dict[str, Any]) -> list[str]:
    """The machine's run-to-run spread from its studies (this one and its history: what a comparison of separate
    runs carries), and per cell the slowdown separate runs detect at 1, 2 and 4 runs a side."""
    from bench.studies.noise.figures import runs_mde

    studies = readable_studies(path)
    found = run_spread_of(studies)
    if found is None:
        return ["No cell ran in two separate runs: the run-to-run spread is unmeasured, and a comparison of separate "
                "runs on this machine decides nothing.", ""]
    run_sd, dof, most, cells = found
    repeats = (data.get("settings") or {}).get("repeats") or 3
    where = (f"{cells} cell{'s' if cells != 1 else ''} in {len(studies)} "
             f"{'study' if len(studies) == 1 else 'studies'}")
    lines = [
        f"The machine's run-to-run spread, **{pct(run_sd)}** a run ({dof} degrees of freedom): per cell, how far its "
        f"separate runs of identical code (every A/A round, both sides; every delay pair's untouched side; up to "
        f"{most} runs of each of {where}) move beyond what their processes explain, "
        "pooled. A study's A/A rounds and delay pairs all ran in one invocation, minutes apart, so they measure the "
        "short time scale; the machine's slower wandering over hours shows only between studies. A comparison of two "
        "separate runs carries it on each side (docs/METHOD.md); more processes do not shrink it. More runs a side "
        "shrink it only where those runs are independent: runs made back to back share the machine's slow drift, "
        "and the 1/k the columns below assume does not hold for them; re-measuring both sides interleaved in one "
        "invocation is the design that decides (the A/A table's MDE column). The slowdown a comparison across "
        f"separate runs, judged alone at 95%, detects with 80% power at {repeats} processes a run, from each cell's "
        "process spread and this run spread (bench/studies/noise/figures.py runs_mde):",
        "",
    ]
    body = [[text.md(cell["cell"]), pct(cell["log_sd"]),
             *[pct(runs_mde(cell["log_sd"], run_sd, dof, repeats, k), sign=True) for k in RUNS_A_SIDE]]
            for cell in data.get("cells") or [] if cell.get("log_sd") is not None]  # fmt: skip
    if body:
        headers = ["cell", "process spread", *[f"MDE across runs, {k} run{'s' if k > 1 else ''} a side"
                                               + (" (independent)" if k > 1 else "") for k in RUNS_A_SIDE]]
        lines += [github_table(body, headers), ""]
    return lines


def study_lines(path: Path, data: dict[str, Any]) -> list[str]:
    machine = data.get("machine") or {}
    lines = [
        f"## {machine_label(machine)}",
        "",
        f"`{path.name}`: {processor_text(data)}. Measured {data.get('created_at')} to {data.get('finished_at')} at "
        f"commit {commit_text(data)}; {settings_text(data)}. The machine: {conditions_text(data)}. Each side's "
        f"results: `{data.get('runs_dir')}/` (`make compare A=.../round-1/A B=.../round-1/B` shows one round).",
        "",
    ]
    if not data.get("complete", True):
        lines += ["**This study was interrupted**: its figures cover what had finished.", ""]
    lines += ["### A/A: the same code against itself", ""] + aa_lines(data)
    lines += ["### The process-to-process spread", ""] + spread_lines(data)
    lines += ["### The run-to-run spread", ""] + run_spread_lines(path, data)
    lines += ["### Power: a known slowdown", ""] + power_lines(data)
    lines += loaded_power_lines(data)
    lines += detection_lines(data)
    return lines


def render_noise(results_dir: Path) -> Path:
    """Write <results>/noise/NOISE.md from every current study file there; returns its path."""
    studies = load_studies(results_dir)
    lines = [
        f"# {TITLE} (`make noise`)",
        "",
        "Rendered by `make noise` (`python -m bench noise`) from the study files in this folder, one per "
        "processor (earlier studies in `history/`). A comparison's verdict (docs/METHOD.md) is only as good as the "
        "machine is steady: on the same code it should never say faster or slower, and a real slowdown should be "
        "called slower. This page says how often identical code was called different here, how far one process's "
        "figure moves from another's, and the smallest slowdown the verdict detects.",
        "",
    ]
    if not studies:
        lines += ["No study yet: run `make noise`.", ""]
    for path, data in studies:
        lines += study_lines(path, data)
    out = Path(results_dir) / NOISE_DIR / PAGE
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out


def section_lines(path: Path, data: dict[str, Any], link: str, exact: bool = True) -> list[str]:
    """A few lines for RESULTS.md: the machine's false-positive count, spread and minimum detectable effects."""
    aa, spread = data["aa"], data.get("process_spread")
    mde = (data.get("mde") or {}).get("calibration") or {}
    per_cell = [v["mde"] for v in ((data.get("mde") or {}).get("per_cell") or {}).values()]
    repeats = (data.get("settings") or {}).get("repeats")
    pairs = (data.get("settings") or {}).get("pairs")
    sentences = [
        f"This machine's noise study (`make noise`, {data.get('created_at', '')[:10]}, "
        f"{(data.get('conditions') or {}).get('label', 'conditions not recorded')}): identical code was called "
        f"different in {aa[FASTER] + aa[SLOWER]} of {aa['pairs']} pairs ({aa[SAME]} same, {aa[INCONCLUSIVE]} "
        "inconclusive)",
        f"one process's figure moves from another's by {pct(spread['log_sd'])} (standard deviation of ln median, "
        "the largest cell's; a cell of one process borrows it)" if spread else "no process-to-process spread measured",
        (f"a +{mde['slowdown']:.0%} slowdown of the calibration probe was called slower in at least "
         f"{mde.get('required')} of {pairs} pairs") if mde.get("slowdown") is not None
        else f"no slowdown tried was detected reliably ({mde.get('note', '')})",
    ]
    if per_cell:
        sentences.append(f"on the product cells a difference of {pct(min(per_cell), sign=True)} to "
                         f"{pct(max(per_cell), sign=True)} is detected with 80% power at {repeats} processes a side")
    if (runs := run_spread_of(readable_studies(path))) is not None:
        sentences.append(f"separate runs of the same code move by {pct(runs[0])} a run beyond that, which more "
                         "processes do not shrink (`make compare A=<run>,<run>,... B=...` pools runs)")
    note = "" if exact else LABEL_MATCH_NOTE
    return ["; ".join(sentences) + f". All figures: [{PAGE}]({link}){note}.", ""]


def noise_section(table, page) -> list[str]:
    """RESULTS.md's section for a table: its machine's noise study, where one exists (else no lines, no trace)."""
    results_dir = page.fig_dir.parent
    items = getattr(table.group, "items", None) or []
    if not items:
        return []
    machine = items[0].result.provenance.get("machine") or {}
    found = find_noise_file(results_dir, machine)
    if found is None:
        return []
    path, exact = found
    try:
        data = read_noise_file(path)
    except (OSError, ValueError, json.JSONDecodeError):
        return []
    if data.get("format") != NOISE_FORMAT or "aa" not in data:
        return []
    link = Path(os.path.relpath(path.parent / PAGE, page.out_dir)).as_posix()
    return section_lines(path, data, link, exact)


def main(argv: list[str] | None = None) -> int:
    """Render <results>/noise/NOISE.md again from the study files there, measuring nothing (`make noise-page`)."""
    from bench.base.argtypes import DEFAULT_RESULTS, OneLineErrors
    from bench.base.resultsdir import results_folder

    parser = OneLineErrors(prog="python -m bench noise-page", description=main.__doc__)
    parser.add_argument("--results-dir", type=results_folder, default=DEFAULT_RESULTS)
    args = parser.parse_args(argv)
    print(render_noise(args.results_dir))
    return 0


# RESULTS.md's part: once a machine, under its "Studies"
SECTIONS = [Section(TITLE, noise_section, per_machine=True)]


if __name__ == "__main__":
    raise SystemExit(main())
