"""The published findings (bench/data/hf_2019_pytorch_vs_tensorflow.csv) against ours: "then and now".

Pure functions of the points (model, column, batch, length, status, mean/median ms): the tests feed them
synthetic points. A finding about a GPU, re-tested only on a CPU, is "not tested on this hardware", never
"holds"; a finding without the points it needs is "not measured".
"""
from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

PUBLISHED_CSV = Path(__file__).resolve().parent.parent / "data" / "hf_2019_pytorch_vs_tensorflow.csv"
PYTORCH, TENSORFLOW = "torch-eager", "tf-function"  # the published comparison: eager PyTorch vs TF 2.0 (tf.function)
HOLDS, DOES_NOT_HOLD, NOT_TESTED, NOT_MEASURED = "holds", "does not hold", "not tested on this hardware", "not measured"


@dataclass(frozen=True)
class PointFigure:
    model: str
    column: str
    batch: int
    length: int
    status: str
    mean_ms: float | None = None
    median_ms: float | None = None


@dataclass(frozen=True)
class Finding:
    key: str
    claim: str
    published: str
    ours: str
    verdict: str


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


def difference_grows(points: list[PointFigure]) -> bool | None:
    """Whether |TF - PT| grows with the input (batch x length): the larger half of the paired points has the
    larger mean absolute difference. None with fewer than 4 paired points."""
    pt, tf = _ok(points, PYTORCH), _ok(points, TENSORFLOW)
    pairs = sorted((k[1] * k[2], abs(tf[k].mean_ms - pt[k].mean_ms)) for k in set(pt) & set(tf))
    if len(pairs) < 4:
        return None
    half = len(pairs) // 2
    return statistics.fmean(d for _, d in pairs[half:]) > statistics.fmean(d for _, d in pairs[:half])


def findings(points: list[PointFigure], on_gpu: bool) -> list[Finding]:
    ref = published()
    out: list[Finding] = []
    device = "gpu" if on_gpu else "cpu"
    means = framework_means(points)
    paired, theirs_way = means["paired"], means["published_way"]
    for dev in ("cpu", "gpu"):
        row = ref[("mean_inference_time_all_models", dev)]
        claim = f"{dev.upper()}: mean over all models and points, PyTorch vs TensorFlow ({row['note']})"
        pub = f"PyTorch {row['pytorch']} s, TensorFlow {row['tensorflow']} s"
        if dev != device:
            out.append(Finding(f"mean_{dev}", claim, pub, f"run on a {device.upper()} only", NOT_TESTED))
            continue
        if not paired["points"]:
            out.append(
                Finding(
                    f"mean_{dev}",
                    claim,
                    pub,
                    "no point where both PyTorch eager and TensorFlow succeeded",
                    NOT_MEASURED,
                )
            )
            continue
        tf_slower_then = float(row["tensorflow"]) > float(row["pytorch"])
        tf_slower_now = paired["tensorflow"] > paired["pytorch"]
        ours = (
            f"PyTorch {paired['pytorch']:.4g} s, TensorFlow {paired['tensorflow']:.4g} s over {paired['points']} points where both "
            f"succeeded (the published way: {theirs_way['pytorch']:.4g} s over {theirs_way['points']} vs "
            f"{theirs_way['tensorflow']:.4g} s over {theirs_way['points_tensorflow']})"
        )
        out.append(
            Finding(f"mean_{dev}", claim, pub, ours, HOLDS if tf_slower_now == tf_slower_then else DOES_NOT_HOLD)
        )
    grows = difference_grows(points)
    out.append(
        Finding(
            "difference_grows",
            "the larger the input, the larger the PyTorch/TensorFlow difference",
            "stated, no figure",
            {
                None: "fewer than 4 points where both succeeded",
                True: "the larger half of the inputs has the larger mean difference",
                False: "the larger half of the inputs does not have the larger mean difference",
            }[grows],
            NOT_MEASURED if grows is None else HOLDS if grows else DOES_NOT_HOLD,
        )
    )

    row = ref[("torchscript_speedup_vs_eager", "any")]
    ts = speedups(points, PYTORCH, "torch-traced")
    if ts:
        per_model = {
            m: statistics.fmean(v for k, v in ts.items() if k[0] == m) for m in dict.fromkeys(k[0] for k in ts)
        }
        mean_x = statistics.fmean(per_model.values())
        ours = (
            f"x{mean_x:.2f} (mean over {len(per_model)} models of each model's mean eager/traced ratio; "
            + ", ".join(f"{m} x{v:.2f}" for m, v in per_model.items())
            + ")"
        )
        out.append(
            Finding(
                "torchscript",
                f"TorchScript (traced) faster than eager PyTorch, on average ({device.upper()} run)",
                f"x{row['value']}",
                ours,
                HOLDS if mean_x > 1 else DOES_NOT_HOLD,
            )
        )
    else:
        out.append(
            Finding(
                "torchscript",
                "TorchScript (traced) faster than eager PyTorch, on average",
                f"x{row['value']}",
                "no point with both columns",
                NOT_MEASURED,
            )
        )
    xlnet = {k: v for k, v in ts.items() if k[0] == "xlnet"}
    out.append(
        Finding(
            "torchscript_xlnet",
            "TorchScript always faster on XLNet",
            "always faster",
            f"faster at {sum(v > 1 for v in xlnet.values())} of {len(xlnet)} points" if xlnet else "XLNet not measured",
            NOT_MEASURED if not xlnet else HOLDS if all(v > 1 for v in xlnet.values()) else DOES_NOT_HOLD,
        )
    )
    xlm = {k: v for k, v in ts.items() if k[0] == "xlm"}
    if len(xlm) >= 2:
        ordered = [v for _, v in sorted((k[1] * k[2], v) for k, v in xlm.items())]
        half = len(ordered) // 2
        small, large = statistics.fmean(ordered[:half]), statistics.fmean(ordered[half:])
        verdict = HOLDS if small > 1 > large else DOES_NOT_HOLD
        ours = f"smaller half of the inputs x{small:.2f}, larger half x{large:.2f}"
    else:
        verdict, ours = NOT_MEASURED, "fewer than 2 XLM points with both columns"
    out.append(
        Finding(
            "torchscript_xlm",
            "TorchScript unreliable on XLM: faster on small inputs, slower on large",
            "stated, no figure",
            ours,
            verdict,
        )
    )

    xla = speedups(points, TENSORFLOW, "tf-xla")
    xla_ours = (
        (
            f"on this {device.upper()}: x{statistics.fmean(xla.values()):.2f} mean over {len(xla)} points, "
            f"{sum(v > 1 for v in xla.values())} faster"
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
            models = {k[0] for k in xla}
            every = all(statistics.fmean(v for k, v in xla.items() if k[0] == m) > 1 for m in models)
            out.append(
                Finding(
                    key, f"GPU: {label} {row['value']}", f"x{row['value']}", xla_ours, HOLDS if every else DOES_NOT_HOLD
                )
            )
        else:
            best = 1 - 1 / max(xla.values())
            out.append(
                Finding(
                    key,
                    f"GPU: {label} {row['value']}",
                    f"{float(row['value']):.0%} less time",
                    f"at most {best:.0%} less time",
                    HOLDS if best >= float(row["value"]) * 0.5 else DOES_NOT_HOLD,
                )
            )

    row = ref[("pytorch_oom_point", "gpu")]
    ooms = sorted({(p.column, p.batch, p.length) for p in points if p.status in ("oom", "oom-predicted")})
    ours = f"{len(ooms)} out-of-memory point(s)" + (
        ": " + ", ".join(f"{c} {b}x{n}" for c, b, n in ooms) if ooms else ""
    )
    out.append(
        Finding(
            "pytorch_oom",
            f"GPU: PyTorch ran out of memory at batch x length {row['value']} for all but the distilled models",
            row["value"],
            ours if on_gpu else ours + f" on this {device.upper()}",
            NOT_TESTED if not on_gpu else HOLDS if any(c.startswith("torch") for c, _, _ in ooms) else DOES_NOT_HOLD,
        )
    )
    return out
