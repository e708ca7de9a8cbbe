"""The published findings (bench/data/hf_2019_pytorch_vs_tensorflow.csv) against ours: "then and now".

Pure functions of the points (model, column, batch, length, status, mean/median ms, the median's log standard
error, the noise gates' reason): the tests feed them synthetic points. A finding about a GPU, re-tested only on a
CPU, is "not tested on this hardware", never "holds"; a finding without the points it needs is "not measured".

A finding about means or speed-ups is decided by a ratio with its 95% interval: the geometric mean over the paired
points of one column's median over the other's. Each point's ratio carries its steps' standard error; each column is
one worker process that measured every point, so a worker's offset is shared by all its points and averaging points
does not shrink it: the mean's variance adds the two workers' offsets (2 x the machine's process-to-process log
variance, from its noise study) once. Without that spread a comparison against 1 decides nothing (inconclusive). A
ratio of two such means over disjoint points of the same columns (the larger inputs' over the smaller's) has the
offsets cancel, so it needs no spread. The published way's arithmetic means are kept beside, as published.
"""
from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass

from bench.base import stats
from bench.base.published import DATA_DIR
from bench.base.stats import INCONCLUSIVE, ProcessSpread, Ratio, fmt_factor, geometric_mean, welch_dof
from bench.judge import claims

PUBLISHED_CSV = DATA_DIR / "hf_2019_pytorch_vs_tensorflow.csv"
PYTORCH, TENSORFLOW = "torch-eager", "tf-function"  # the published comparison: eager PyTorch vs TF 2.0 (tf.function)
HOLDS, DOES_NOT_HOLD, NOT_MEASURED = stats.HOLDS, stats.DOES_NOT_HOLD, claims.NOT_MEASURED
NOT_TESTED = "not tested on this hardware"


@dataclass(frozen=True)
class PointFigure:
    model: str
    column: str
    batch: int
    length: int
    status: str
    mean_ms: float | None = None
    median_ms: float | None = None
    log_se: float | None = None  # the standard error of ln(median) from the point's own steps (bench/base/stats.py)
    dof: float = math.inf  # its degrees of freedom
    noise: str = ""  # why the point was measured on a disturbed machine (the noise gates); "" where it was not


@dataclass(frozen=True)
class Finding:
    key: str
    claim: str
    published: str
    ours: str
    verdict: str  # holds, does not hold, not tested, not measured, or inconclusive followed by its reason

    @property
    def decided(self) -> str:
        """The verdict without its reason."""
        return INCONCLUSIVE if self.verdict.startswith(INCONCLUSIVE) else self.verdict


def published() -> dict[tuple[str, str], dict[str, str]]:
    """(finding, device) -> its row of the published CSV."""
    with PUBLISHED_CSV.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {(r["finding"], r["device"]): r for r in rows}


def _ok(points: list[PointFigure], column: str) -> dict[tuple, PointFigure]:
    return {
        (p.model, p.batch, p.length): p
        for p in points
        if p.column == column and p.status == "ok" and p.mean_ms is not None
    }


def framework_means(points: list[PointFigure]) -> dict[str, dict[str, float | int | None]]:
    """Mean inference time (s) of PyTorch and TensorFlow two ways: over the points where both succeeded
    ("paired": the fair one), and the published way (each framework over its own successful points, so a
    framework that failed the largest points looks faster)."""
    pt, tf = _ok(points, PYTORCH), _ok(points, TENSORFLOW)
    both = sorted(set(pt) & set(tf))

    def mean(values):
        return statistics.fmean(values) / 1000 if values else None

    return {
        "paired": {
            "pytorch": mean([pt[k].mean_ms for k in both]),
            "tensorflow": mean([tf[k].mean_ms for k in both]),
            "points": len(both),
        },
        "published_way": {
            "pytorch": mean([p.mean_ms for p in pt.values()]),
            "tensorflow": mean([p.mean_ms for p in tf.values()]),
            "points": len(pt),
            "points_tensorflow": len(tf),
        },
    }


def column_means(points: list[PointFigure]) -> dict[str, dict[str, float | int | None]]:
    """Per model, each column's mean time (s) over the points where every column that ran on that model succeeded
    (a column that failed or ran out of memory at a point removes the point for all), and how many such points."""
    out: dict[str, dict[str, float | int | None]] = {}
    for model in dict.fromkeys(p.model for p in points):
        ran = [p for p in points if p.model == model and p.status != "unsupported"]
        columns = list(dict.fromkeys(p.column for p in ran))
        ok = {c: _ok(ran, c) for c in columns}
        common = set.intersection(*(set(v) for v in ok.values())) if ok else set()
        out[model] = {
            "points": len(common),
            **{c: statistics.fmean(ok[c][k].mean_ms for k in common) / 1000 if common else None for c in columns},
        }
    return out


def speedups(points: list[PointFigure], slow: str, fast: str) -> dict[tuple, float]:
    """(model, batch, length) -> slow column's mean / fast column's mean, where both succeeded."""
    a, b = _ok(points, slow), _ok(points, fast)
    return {k: a[k].mean_ms / b[k].mean_ms for k in sorted(set(a) & set(b)) if b[k].mean_ms > 0}


def absolute_differences(points: list[PointFigure]) -> tuple[float, float] | None:
    """The published way's figure for "the larger the input, the larger the difference": the mean |TF - PT| (ms) of
    the smaller and the larger half of the paired points by batch x length. None with fewer than 4 paired points."""
    pt, tf = _ok(points, PYTORCH), _ok(points, TENSORFLOW)
    pairs = sorted((k[1] * k[2], abs(tf[k].mean_ms - pt[k].mean_ms)) for k in set(pt) & set(tf))
    if len(pairs) < 4:
        return None
    half = len(pairs) // 2
    return statistics.fmean(d for _, d in pairs[:half]), statistics.fmean(d for _, d in pairs[half:])


# -- ratios with their intervals


def _timed(points: list[PointFigure], column: str) -> dict[tuple, PointFigure]:
    """The column's ok points with a median."""
    return {
        (p.model, p.batch, p.length): p
        for p in points
        if p.column == column and p.status == "ok" and p.median_ms is not None and p.median_ms > 0
    }


@dataclass(frozen=True)
class PointRatios:
    """Per paired point, numerator median / denominator median with the two medians' step error (no workers'
    offsets: `offsets()` adds them), and the paired points left out of any verdict (a noisy side, no interval)."""

    ratios: dict[tuple, Ratio]
    left_out: dict[tuple, str]

    def where(self, keep) -> PointRatios:
        return PointRatios({k: r for k, r in self.ratios.items() if keep(k)},
                           {k: why for k, why in self.left_out.items() if keep(k)})

    def left_out_text(self) -> str:
        if not self.left_out:
            return ""
        noisy = sum(1 for why in self.left_out.values() if why.startswith("noisy"))
        other = len(self.left_out) - noisy
        parts = ([f"{noisy} noisy"] if noisy else []) + ([f"{other} without an interval"] if other else [])
        return f"; {' and '.join(parts)} paired point(s) left out"


def point_ratios(points: list[PointFigure], numerator: str, denominator: str) -> PointRatios:
    a, b = _timed(points, denominator), _timed(points, numerator)
    ratios, left_out = {}, {}
    for k in sorted(set(a) & set(b)):
        pa, pb = a[k], b[k]
        if pa.noise or pb.noise:
            left_out[k] = "noisy: " + "; ".join(filter(None, (pa.noise, pb.noise)))
        elif pa.log_se is None or pb.log_se is None:
            left_out[k] = "a side without an interval (a single step)"
        else:
            variances = [pa.log_se**2, pb.log_se**2]
            ratios[k] = Ratio(pb.median_ms / pa.median_ms, math.sqrt(sum(variances)),
                              welch_dof(variances, [pa.dof, pb.dof]))
    return PointRatios(ratios, left_out)


def with_offsets(r: Ratio | None, spread: ProcessSpread | None) -> Ratio | None:
    """A ratio of two columns' points compared with a fixed figure: each column is one worker process, so its
    interval adds the two workers' offsets (2 x the machine's process-to-process log variance), once however many
    points it averages. Without the machine's spread it decides nothing."""
    if r is None:
        return None
    if spread is None:
        return r.undecided(claims.ONE_PROCESS_COLUMN)
    variances = [r.log_se**2, 2 * spread.log_sd**2]
    return Ratio(r.value, math.sqrt(sum(variances)), welch_dof(variances, [r.dof, spread.dof]), r.decidable, r.reason)


def mean_ratio(found: PointRatios, spread: ProcessSpread | None) -> Ratio | None:
    """The geometric mean of the points' ratios with its interval, the workers' offsets included; None without a
    point that has an interval."""
    return with_offsets(geometric_mean(list(found.ratios.values())), spread)


def quotient(a: Ratio, b: Ratio) -> Ratio:
    """a / b of two independent ratios."""
    variances = [a.log_se**2, b.log_se**2]
    return Ratio(a.value / b.value, math.sqrt(sum(variances)), welch_dof(variances, [a.dof, b.dof]),
                 a.decidable and b.decidable, "; ".join(dict.fromkeys(filter(None, (a.reason, b.reason)))))


def halves(found: PointRatios) -> tuple[PointRatios, PointRatios] | None:
    """The smaller and the larger half of the points with a ratio, by batch x length; None with fewer than 2."""
    keys = sorted(found.ratios, key=lambda k: (k[1] * k[2], k))
    if len(keys) < 2:
        return None
    small = set(keys[: len(keys) // 2])
    return (PointRatios({k: found.ratios[k] for k in keys if k in small}, {}),
            PointRatios({k: found.ratios[k] for k in keys if k not in small}, {}))


def _not_measured_or(verdict: str, found: PointRatios) -> str:
    if verdict == NOT_MEASURED and found.left_out:
        return f"{INCONCLUSIVE} (no paired point can decide: {next(iter(found.left_out.values()))})"
    return verdict


def _combine(verdicts: list[str]) -> str:
    """All of several claims: does not hold if any does not, holds if all do, else the first inconclusive one."""
    if any(v == DOES_NOT_HOLD for v in verdicts):
        return DOES_NOT_HOLD
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    return next((v for v in verdicts if v not in (HOLDS, DOES_NOT_HOLD)), NOT_MEASURED)


def x(value: float) -> str:
    """A ratio as the published grid figures print it: x1.23 (three significant digits: never x0.00)."""
    return "x" + fmt_factor(value, unit="")


# -- the findings


def mean_finding(points: list[PointFigure], device: str, row: dict[str, str], spread: ProcessSpread | None) -> Finding:
    """"TensorFlow slower (or faster) than PyTorch": the TF / PT geometric mean over the paired points, decided by
    its interval against 1, with the published way's arithmetic means beside it."""
    means = framework_means(points)
    paired, theirs_way = means["paired"], means["published_way"]
    claim = f"{device.upper()}: mean over all models and points, PyTorch vs TensorFlow ({row['note']})"
    pub = f"PyTorch {row['pytorch']} s, TensorFlow {row['tensorflow']} s"
    if not paired["points"]:
        return Finding(f"mean_{device}", claim, pub, "no point where both PyTorch eager and TensorFlow succeeded",
                       NOT_MEASURED)
    tf_slower_then = float(row["tensorflow"]) > float(row["pytorch"])
    found = point_ratios(points, TENSORFLOW, PYTORCH)
    r = mean_ratio(found, spread)
    # the published direction, as a claim that a ratio lies above 1
    verdict = _not_measured_or(claims.above(r if tf_slower_then or r is None else r.inverse(), 1.0), found)
    ours = (
        f"TensorFlow / PyTorch {claims.ours(r)}: geometric mean over {len(found.ratios)} paired points"
        f"{found.left_out_text()}; arithmetic means PyTorch {paired['pytorch']:.4g} s, TensorFlow "
        f"{paired['tensorflow']:.4g} s over {paired['points']} points where both succeeded (the published way: "
        f"{theirs_way['pytorch']:.4g} s over {theirs_way['points']} vs {theirs_way['tensorflow']:.4g} s over "
        f"{theirs_way['points_tensorflow']})"
    )
    return Finding(f"mean_{device}", claim, pub, ours, verdict)


def difference_grows(points: list[PointFigure]) -> Finding:
    """"The larger the input, the larger the PyTorch/TensorFlow difference", as ratios: TF / PT over the larger half
    of the paired points moves further from 1 (its own way) than over the smaller half. The quotient of the two
    halves' geometric means has the workers' offsets cancel, so it decides without the machine's spread; halves on
    either side of 1 (the difference changes its direction) are inconclusive."""
    claim, published = "the larger the input, the larger the PyTorch/TensorFlow difference", "stated, no figure"
    found = point_ratios(points, TENSORFLOW, PYTORCH)
    split = halves(found)
    absolute = absolute_differences(points)
    if split is None or absolute is None:
        return Finding("difference_grows", claim, published, "fewer than 4 points where both succeeded",
                       NOT_MEASURED)
    small, large = (geometric_mean(list(h.ratios.values())) for h in split)
    arithmetic = (f" (the published way, in ms: mean |TF - PT| {absolute[0]:.4g} over the smaller half, "
                  f"{absolute[1]:.4g} over the larger)")
    if small is None or large is None:
        return Finding("difference_grows", claim, published, "too few points with an interval" + arithmetic,
                       f"{INCONCLUSIVE} (too few points with an interval{found.left_out_text()})")
    growth = quotient(large, small) if large.value >= 1 else quotient(small, large)
    ours = (
        f"TensorFlow / PyTorch over the larger half of the inputs {x(large.value)}, over the smaller half "
        f"{x(small.value)}; the larger half's difference over the smaller's {claims.ours(growth)}"
        f"{found.left_out_text()}" + arithmetic
    )
    if (large.value - 1) * (small.value - 1) < 0:
        verdict = f"{INCONCLUSIVE} (the two halves lie on either side of 1x: the difference changes its direction)"
    else:
        verdict = claims.above(growth, 1.0)
    return Finding("difference_grows", claim, published, ours, verdict)


def findings(points: list[PointFigure], on_gpu: bool, spread: ProcessSpread | None = None) -> list[Finding]:
    """Every published finding against ours; `spread`: the machine's process-to-process spread (its noise study),
    without which a comparison of two columns against a fixed figure is inconclusive."""
    ref = published()
    device = "gpu" if on_gpu else "cpu"
    ts = speedups(points, PYTORCH, "torch-traced")
    traced = point_ratios(points, PYTORCH, "torch-traced")  # eager / traced: above 1, traced faster
    return [
        *mean_findings(points, device, ref, spread),
        difference_grows(points),
        torchscript_finding(ts, traced, device, ref[("torchscript_speedup_vs_eager", "any")], spread),
        torchscript_xlnet_finding(ts, traced, spread),
        torchscript_xlm_finding(ts, traced, spread),
        *xla_findings(points, on_gpu, ref, spread),
        pytorch_oom_finding(points, on_gpu, ref[("pytorch_oom_point", "gpu")]),
    ]


def mean_findings(
    points: list[PointFigure], device: str, ref: dict[tuple[str, str], dict[str, str]], spread: ProcessSpread | None
) -> list[Finding]:
    """The mean over all models and points, PyTorch vs TensorFlow: on this run's device, and the other's not tested."""
    out: list[Finding] = []
    for dev in ("cpu", "gpu"):
        row = ref[("mean_inference_time_all_models", dev)]
        if dev != device:
            claim = f"{dev.upper()}: mean over all models and points, PyTorch vs TensorFlow ({row['note']})"
            pub = f"PyTorch {row['pytorch']} s, TensorFlow {row['tensorflow']} s"
            out.append(Finding(f"mean_{dev}", claim, pub, f"run on a {device.upper()} only", NOT_TESTED))
        else:
            out.append(mean_finding(points, dev, row, spread))
    return out


def torchscript_finding(
    ts: dict[tuple, float], traced: PointRatios, device: str, row: dict[str, str], spread: ProcessSpread | None
) -> Finding:
    """TorchScript (traced) against eager PyTorch, on average over the points with both columns."""
    if not ts:
        return Finding(
            "torchscript",
            "TorchScript (traced) faster than eager PyTorch, on average",
            f"x{row['value']}",
            "no point with both columns",
            NOT_MEASURED,
        )
    per_model = {m: statistics.fmean(v for k, v in ts.items() if k[0] == m) for m in dict.fromkeys(k[0] for k in ts)}
    mean_x = statistics.fmean(per_model.values())
    r = mean_ratio(traced, spread)
    ours = (
        f"eager / traced {claims.ours(r)}: geometric mean over {len(traced.ratios)} paired points"
        f"{traced.left_out_text()} (the published way: {x(mean_x)}, mean over {len(per_model)} models of each "
        "model's mean eager/traced ratio; "
        + ", ".join(f"{m} {x(v)}" for m, v in per_model.items())
        + ")"
    )
    return Finding(
        "torchscript",
        f"TorchScript (traced) faster than eager PyTorch, on average ({device.upper()} run)",
        f"x{row['value']}",
        ours,
        _not_measured_or(claims.above(r, 1.0), traced),
    )


def torchscript_xlnet_finding(ts: dict[tuple, float], traced: PointRatios, spread: ProcessSpread | None) -> Finding:
    """TorchScript always faster on XLNet: at every XLNet point, with confidence."""
    xlnet = {k: v for k, v in ts.items() if k[0] == "xlnet"}
    if xlnet:
        at_points = traced.where(lambda k: k[0] == "xlnet")
        each = [claims.above(with_offsets(r, spread), 1.0) for r in at_points.ratios.values()]
        faster = sum(v == HOLDS for v in each)
        slower = sum(v == DOES_NOT_HOLD for v in each)
        counted = (f"faster with confidence at {faster}, slower at {slower} of {len(each)} points" if spread else
                   f"{len(each)} points, none decidable without the machine's process spread")
        ours = (f"{counted}{at_points.left_out_text()} (the published way: faster at "
                f"{sum(v > 1 for v in xlnet.values())} of {len(xlnet)} points)")
        verdict = _not_measured_or(_combine(each), at_points)
        if at_points.left_out and verdict == HOLDS:  # "always" cannot hold over points left out
            verdict = f"{INCONCLUSIVE} ({len(at_points.left_out)} point(s) left out of the verdict)"
    else:
        ours, verdict = "XLNet not measured", NOT_MEASURED
    return Finding("torchscript_xlnet", "TorchScript always faster on XLNet", "always faster", ours, verdict)


def torchscript_xlm_finding(ts: dict[tuple, float], traced: PointRatios, spread: ProcessSpread | None) -> Finding:
    """TorchScript unreliable on XLM: faster on the smaller half of the inputs, slower on the larger."""
    xlm = {k: v for k, v in ts.items() if k[0] == "xlm"}
    xlm_ratios = traced.where(lambda k: k[0] == "xlm")
    split = halves(xlm_ratios)
    if len(xlm) >= 2 and split is not None:
        ordered = [v for _, v in sorted((k[1] * k[2], v) for k, v in xlm.items())]
        half = len(ordered) // 2
        small_x, large_x = statistics.fmean(ordered[:half]), statistics.fmean(ordered[half:])
        small, large = (mean_ratio(h, spread) for h in split)
        # faster on the smaller inputs (eager / traced above 1), slower on the larger (below 1)
        verdict = _combine([claims.above(small, 1.0), claims.above(large.inverse() if large else None, 1.0)])
        ours = (f"smaller half of the inputs {claims.ours(small)}, larger half {claims.ours(large)}"
                f"{xlm_ratios.left_out_text()} (the published way: {x(small_x)} and {x(large_x)})")
    else:
        verdict, ours = NOT_MEASURED, "fewer than 2 XLM points with both columns"
        if len(xlm) >= 2 and xlm_ratios.left_out:
            verdict = f"{INCONCLUSIVE} (fewer than 2 XLM points with an interval{xlm_ratios.left_out_text()})"
    return Finding(
        "torchscript_xlm",
        "TorchScript unreliable on XLM: faster on small inputs, slower on large",
        "stated, no figure",
        ours,
        verdict,
    )


def xla_findings(
    points: list[PointFigure], on_gpu: bool, ref: dict[tuple[str, str], dict[str, str]], spread: ProcessSpread | None
) -> list[Finding]:
    """XLA against TensorFlow, two GPU findings: a speed-up on every model, and less time at small inputs."""
    device = "gpu" if on_gpu else "cpu"
    out: list[Finding] = []
    xla = speedups(points, TENSORFLOW, "tf-xla")
    with_xla = point_ratios(points, TENSORFLOW, "tf-xla")  # TF / XLA: above 1, XLA faster
    xla_mean = mean_ratio(with_xla, spread)
    xla_ours = (
        (
            f"on this {device.upper()}: TF / XLA {claims.ours(xla_mean)}, geometric mean over {len(with_xla.ratios)} "
            f"paired points{with_xla.left_out_text()} (the published way: {x(statistics.fmean(xla.values()))} mean "
            f"over {len(xla)} points, {sum(v > 1 for v in xla.values())} faster)"
        )
        if xla
        else "no point with both columns"
    )
    for key, label in (
        ("xla_speedup_vs_tf", "XLA speeds up every model, most by about"),
        ("xla_time_reduction_small_inputs", "XLA: up to this much less time at small inputs"),
    ):
        row = ref[(key, "gpu")]
        if not on_gpu:
            out.append(
                Finding(
                    key,
                    f"GPU: {label} {row['value']}",
                    f"{row['value']} {row['unit']}",
                    xla_ours + " (a GPU finding: not re-tested)",
                    NOT_TESTED,
                )
            )
        elif not xla:
            out.append(
                Finding(key, f"GPU: {label} {row['value']}", f"{row['value']} {row['unit']}", xla_ours, NOT_MEASURED)
            )
        elif key == "xla_speedup_vs_tf":
            models = list(dict.fromkeys(k[0] for k in xla))
            per_model = {m: mean_ratio(with_xla.where(lambda k, m=m: k[0] == m), spread) for m in models}
            verdict = _not_measured_or(_combine([claims.above(r, 1.0) for r in per_model.values()]), with_xla)
            ours = xla_ours + "; per model " + ", ".join(f"{m} {claims.ours(r)}" for m, r in per_model.items())
            out.append(Finding(key, f"GPU: {label} {row['value']}", f"x{row['value']}", ours, verdict))
        else:
            # at least half the published reduction at some point, with confidence
            threshold = 1 / (1 - float(row["value"]) * 0.5)
            each = [claims.above(with_offsets(r, spread), threshold) for r in with_xla.ratios.values()]
            verdict = (HOLDS if HOLDS in each else DOES_NOT_HOLD if each and all(v == DOES_NOT_HOLD for v in each)
                       else next((v for v in each if v.startswith(INCONCLUSIVE)), NOT_MEASURED))
            best = 1 - 1 / max(xla.values())
            out.append(
                Finding(
                    key,
                    f"GPU: {label} {row['value']}",
                    f"{float(row['value']):.0%} less time",
                    f"at most {best:.0%} less time (the published way); at least {1 - 1 / threshold:.0%} less with "
                    + (f"confidence at {sum(v == HOLDS for v in each)} of {len(each)} points" if spread else
                       "confidence: not decidable without the machine's process spread")
                    + with_xla.left_out_text(),
                    _not_measured_or(verdict, with_xla),
                )
            )
    return out


def pytorch_oom_finding(points: list[PointFigure], on_gpu: bool, row: dict[str, str]) -> Finding:
    """PyTorch out of memory at the published batch x length on a GPU: the points that ran out of memory here."""
    device = "gpu" if on_gpu else "cpu"
    ooms = sorted({(p.column, p.batch, p.length) for p in points if p.status in ("oom", "oom-predicted")})
    ours = f"{len(ooms)} out-of-memory point(s)" + (
        ": " + ", ".join(f"{c} {b}x{n}" for c, b, n in ooms) if ooms else ""
    )
    return Finding(
        "pytorch_oom",
        f"GPU: PyTorch ran out of memory at batch x length {row['value']} for all but the distilled models",
        row["value"],
        ours if on_gpu else ours + f" on this {device.upper()}",
        NOT_TESTED if not on_gpu else HOLDS if any(c.startswith("torch") for c, _, _ in ooms) else DOES_NOT_HOLD,
    )
