"""How sure a figure is, and what a comparison of two figures says: the one place the suite's intervals and verdicts
are computed. Pure functions of numbers. Student's t and the Benjamini-Hochberg adjustment come from scipy.stats
where the interpreter has it (the tools env, where the suite judges); a cell process and a user's own Python
without scipy (the lean bundle carries no scipy: its wheel alone is half the hand-over) use the standard-library
forms below, which tests/test_stats.py holds to scipy's. A cell process never asks for them: it needs only the
median's distribution-free interval.

The model (Kalibera & Jones, "Rigorous benchmarking in reasonable time", 2013): a cell's steps vary within its
process, and its processes vary from one another (memory layout, the moment of a shared machine, what the
framework decided at start-up). More steps shrink only the first part. So a cell's figure is estimated at the
level of its processes: the geometric mean of its processes' median step times, with a Student-t interval on the
logarithms whose degrees of freedom are the processes' count less one. A cell of one process has no measured
process-to-process spread: its interval then borrows the machine's, as its noise study measured it (`make noise`),
or, without one, covers its steps only and decides nothing.

Within one process, the median's interval is distribution-free (order statistics of the binomial), which is what
the sampling rule (bench/base/timing.py) stops on.

A comparison is B / A with a Welch interval on the log scale; its verdict is `same` when the whole interval lies in
the equivalence band, `faster` / `slower` when it excludes 1, else `inconclusive`. A published claim `holds` when
our interval lies within its tolerance and `does not hold` when it lies wholly outside.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import statistics
from dataclasses import dataclass, field

CONFIDENCE = 0.95
# A comparison whose whole 95% interval lies within this band either way (1/1.05 to 1.05) is called "same".
EQUIVALENCE_BAND = 0.05
MIN_STEPS_FOR_INTERVAL = 6  # the fewest steps whose [min, max] covers the median with >= 95% (1 - 2/2^6)

FASTER, SLOWER, SAME, INCONCLUSIVE = "faster", "slower", "same", "inconclusive"
# the two sides did different work a step (bench/judge/same_work.py): no verdict at all
NOT_COMPARABLE = "not comparable"
HOLDS, DOES_NOT_HOLD = "holds", "does not hold"

# What an estimate's interval stands on.
PROCESSES = "processes"  # two or more processes: their own spread
MACHINE_SPREAD = "machine spread"  # one process, widened by the machine's measured process-to-process spread
STEPS_ONLY = "steps only"  # one process, no spread known: the interval covers step noise only, and decides nothing
NO_INTERVAL = "no interval"

# Noise gates: a process measured while the machine was disturbed keeps its figures but takes no part in a verdict.
REFERENCE_FACTOR = 2.0  # the drift probe read more than this multiple of its quiet value before or after the process
# The slowest tenth of the steps over this multiple of the fastest tenth (p90 / p10). On this project's quiet 2-core
# machine the widest of 96 BERT smoke processes was 1.64x (Keras on JAX fit: its steps are bimodal by nature); a
# cell whose 3 steps read [32.4, 241.4, 302.9] ms under load is 3.9x.
SPREAD_LIMIT = 2.5
# A GPU cell's device reference (a fixed bfloat16 matmul on its own device, bench/measure/frameworks.py
# device_reference) read more than this multiple of the run's quietest on that device: a dedicated GPU repeats it within
# a few percent, and a throttled one runs 10-30% slower
DEVICE_REFERENCE_FACTOR = 1.25
JUMP_LIMIT = 1.25  # the second half's median over the first half's (or its inverse) above this
# A cell's processes in two groups: the largest gap between its sorted process medians beyond this (the first noise
# study's native compiled BERT predict: processes at 0.22 and 0.32 ms, 1.45x); three processes or more
GROUP_GAP = 1.25


# -- distributions (the standard library has the normal, not Student's t)


@functools.cache
def _scipy_part(name: str):
    """scipy.<name> where this interpreter has it, imported on first use only (a cell process never pays for it);
    None without it."""
    try:
        return importlib.import_module(f"scipy.{name}")
    except ImportError:
        return None


def scipy_stats():
    return _scipy_part("stats")


def scipy_special():
    """Student's t's CDF and its inverse, as scipy.stats.t computes them, at a third of scipy.stats' import time, which
    a `bench run` of a few cells would otherwise pay for one interval."""
    return _scipy_part("special")


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Lentz's continued fraction for the regularized incomplete beta function (Numerical Recipes' betacf)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1 - x) / b


def t_cdf(t: float, dof: float) -> float:
    if math.isinf(dof):
        return statistics.NormalDist().cdf(t)
    if (library := scipy_special()) is not None:
        return float(library.stdtr(dof, t))  # scipy.stats.t.cdf's own kernel
    tail = 0.5 * regularized_beta(dof / 2, 0.5, dof / (dof + t * t))
    return 1 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)  # every interval asks for one, a table's thousands of them for a few dozen
def t_quantile(p: float, dof: float) -> float:
    """Student's t quantile (dof may be fractional, as Welch's is; infinite: the normal's)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if dof <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {dof}")
    if math.isinf(dof) or dof > 1e7:
        return statistics.NormalDist().inv_cdf(p)
    if (library := scipy_special()) is not None:
        return float(library.stdtrit(dof, p))  # scipy.stats.t.ppf's own kernel
    if p < 0.5:
        return -t_quantile(1 - p, dof)
    low, high = 0.0, 1.0
    while t_cdf(high, dof) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, dof) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(0, min(k, n) + 1)) / 2**n


# -- one process: its median and the median's interval


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float, float] | None:
    """A distribution-free interval for the median: the order statistics [x(k), x(n-k+1)] with the largest k whose
    coverage, 1 - 2 P(Binomial(n, 1/2) <= k - 1), is at least `confidence`. Returns (low, high, coverage), or None
    with fewer than MIN_STEPS_FOR_INTERVAL values (no such k)."""
    n = len(values)
    k, coverage = order_statistic_rank(n, confidence)
    if k == 0:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k], coverage


@functools.cache
def order_statistic_rank(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """median_interval's k for n values and its coverage (k = 0: none). The binomial sums are accumulated term by
    term in exact integers (the same figures as binomial_cdf's, in O(n) rather than O(n^2)), and cached: the
    sampling rule asks again after every step, up to thousands of steps."""
    alpha = (1 - confidence) / 2
    total = 2**n
    term = below = 1  # C(n, k) and sum of C(n, i) for i <= k, at k = 0
    previous = 0  # the same sum for i <= k - 1
    k = 0
    while k + 1 <= n // 2 and below / total <= alpha:  # x(k+1) still keeps the coverage
        k += 1
        term = term * (n - k + 1) // k
        previous, below = below, below + term
    return k, 1 - 2 * previous / total


def relative_half_width(values: list[float], confidence: float = CONFIDENCE) -> float | None:
    """The median interval's wider side over the median (the sampling rule's precision); None without an interval
    or with a median of zero or less."""
    interval = median_interval(values, confidence)
    mid = statistics.median(values) if values else 0.0
    if interval is None or mid <= 0:
        return None
    low, high, _ = interval
    return max(high - mid, mid - low) / mid


def median_log_se(values: list[float]) -> float | None:
    """The standard error of ln(median) of one process's steps: from the order-statistic interval when there are
    enough steps, else the normal approximation (the median's variance is pi/2 times the mean's). None where a
    value is zero or less (a derived figure under noise) or with a single step."""
    if len(values) < 2 or min(values) <= 0:
        return None
    interval = median_interval(values)
    if interval is not None:
        low, high, coverage = interval
        z = statistics.NormalDist().inv_cdf((1 + coverage) / 2)
        return (math.log(high) - math.log(low)) / (2 * z)
    logs = [math.log(v) for v in values]
    return math.sqrt(math.pi / 2 * statistics.variance(logs) / len(logs))


# -- a cell: its processes


@dataclass(frozen=True)
class ProcessSpread:
    """A machine's process-to-process spread of a cell's figure, from its noise study: the standard deviation of
    ln(a process's median), with its degrees of freedom and where it was measured."""

    log_sd: float
    dof: float
    source: str

    def __post_init__(self) -> None:
        if not (self.log_sd >= 0 and self.dof > 0):
            raise ValueError(f"invalid process spread: {self}")


@dataclass(frozen=True)
class Estimate:
    """A cell's figure with the standard error of its logarithm. `basis` says what the interval stands on; only
    PROCESSES and MACHINE_SPREAD take part in a verdict."""

    center: float
    log_se: float | None
    dof: float
    processes: int
    steps: int
    basis: str
    note: str = ""

    @property
    def decidable(self) -> bool:
        return self.log_se is not None and self.basis in (PROCESSES, MACHINE_SPREAD)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        if self.log_se is None or self.center <= 0:
            return None
        half = t_quantile((1 + confidence) / 2, self.dof) * self.log_se
        return self.center * math.exp(-half), self.center * math.exp(half)

    def half_width(self, confidence: float = CONFIDENCE) -> float | None:
        """The interval's wider side as a share of the figure."""
        interval = self.interval(confidence)
        if interval is None:
            return None
        return max(interval[1] / self.center - 1, 1 - interval[0] / self.center)

    def to_dict(self) -> dict:
        interval = self.interval()
        return {
            "center": self.center,
            "low": interval[0] if interval else None,
            "high": interval[1] if interval else None,
            "confidence": CONFIDENCE,
            "log_se": self.log_se,
            "dof": None if math.isinf(self.dof) else self.dof,
            "processes": self.processes,
            "steps": self.steps,
            "basis": self.basis,
        }


def steps_floor(step_ses: list[float | None]) -> float:
    """The least variance of ln(a process's median) that its processes' spread is taken at: the mean of their steps'
    own (median_log_se squared). Their medians can agree by chance; their steps cannot."""
    known = [w * w for w in step_ses if w is not None]
    return statistics.fmean(known) if known else 0.0


def estimate(samples: list[list[float]], spread: ProcessSpread | None = None) -> Estimate | None:
    """A cell's figure from its processes' timed steps (one list per process). None without any step."""
    samples = [list(s) for s in samples if s]
    if not samples:
        return None
    medians = [statistics.median(s) for s in samples]
    steps = sum(len(s) for s in samples)
    processes = len(samples)
    if min(medians) <= 0:
        return Estimate(statistics.median(medians), None, math.inf, processes, steps, NO_INTERVAL,
                        "a process's median is zero or less (a derived figure under noise)")
    within = [median_log_se(s) for s in samples]
    if processes >= 2:
        logs = [math.log(m) for m in medians]
        between = statistics.variance(logs)
        floor = steps_floor(within)
        return Estimate(math.exp(statistics.fmean(logs)), math.sqrt(max(between, floor) / processes),
                        processes - 1, processes, steps, PROCESSES)
    w, n = within[0], len(samples[0])
    step_dof = math.inf if n >= MIN_STEPS_FOR_INTERVAL else max(n - 1, 1)
    if spread is not None:
        w_var = (w or 0.0) ** 2
        total = w_var + spread.log_sd**2
        if total <= 0:
            return Estimate(medians[0], None, math.inf, 1, steps, NO_INTERVAL, "no spread at all")
        terms = (w_var**2 / step_dof if w_var else 0.0) + spread.log_sd**4 / spread.dof
        dof = total**2 / terms if terms > 0 else math.inf
        return Estimate(medians[0], math.sqrt(total), dof, 1, steps, MACHINE_SPREAD,
                        f"one process; the machine's process spread ({spread.source})")
    if w is None:
        return Estimate(medians[0], None, math.inf, 1, steps, NO_INTERVAL, "one process of a single step")
    return Estimate(medians[0], w, step_dof, 1, steps, STEPS_ONLY,
                    "one process: its process-to-process spread is not measured")


def estimate_across_runs(runs: list[list[list[float]]]) -> Estimate | None:
    """A cell's figure from the processes of several separate runs (one list of processes' steps per run): the mean
    of the runs' mean ln(median), its interval from the processes' spread within their runs only. The spread between
    the runs' levels is the run-to-run spread, which the Judge adds over the number of runs (Ratio.with_run_spread);
    taking the processes' spread across runs as well would count part of it twice. Falls back to estimate() over all
    the processes where the runs give no spread within them (one run, or one process each)."""
    runs = [[list(s) for s in processes if s] for processes in runs]
    runs = [processes for processes in runs if processes]
    everything = [s for processes in runs for s in processes]
    medians = [[statistics.median(s) for s in processes] for processes in runs]
    dof = len(everything) - len(runs)
    if len(runs) < 2 or dof < 1 or min(m for ms in medians for m in ms) <= 0:
        return estimate(everything)
    logs = [[math.log(m) for m in ms] for ms in medians]
    means = [statistics.fmean(ls) for ls in logs]
    within = sum((x - mean) ** 2 for ls, mean in zip(logs, means) for x in ls) / dof
    floor = steps_floor([median_log_se(s) for s in everything])
    k = len(runs)
    variance = max(within, floor) * sum(1 / len(ls) for ls in logs) / k**2
    return Estimate(math.exp(statistics.fmean(means)), math.sqrt(variance), dof, len(everything),
                    sum(len(s) for s in everything), PROCESSES, f"{k} runs' processes, their spread within the runs")


def process_groups(medians: list[float]) -> tuple[list[float], list[float]] | None:
    """A cell's processes split in two groups (a slow minority, or two start-up states): its sorted process medians
    on either side of their largest gap, where that gap is beyond GROUP_GAP and there are three processes or more.
    A 3-process interval over such a cell covers its figure far less often than it says, so the split is named beside
    the verdict rather than left to widen the interval unseen. None: one group."""
    ordered = sorted(m for m in medians if m > 0)
    if len(ordered) < 3:
        return None
    gap, at = max((ordered[i + 1] / ordered[i], i + 1) for i in range(len(ordered) - 1))
    return (ordered[:at], ordered[at:]) if gap > GROUP_GAP else None


def groups_text(groups: tuple[list[float], list[float]], unit: str = "ms") -> str:
    low, high = groups
    near = statistics.median
    return (f"processes in two groups, {len(low)} near {near(low):.4g} {unit} and {len(high)} near {near(high):.4g} "
            f"{unit} ({near(high) / near(low):.2f}x apart)")  # fmt: skip


# -- comparisons


@dataclass(frozen=True)
class Ratio:
    """A ratio of two figures (B / A) with the standard error of its logarithm. Not `decidable` (then `reason`
    says why) where either side's interval covers its steps only, or a gate kept it out."""

    value: float
    log_se: float | None
    dof: float
    decidable: bool = True
    reason: str = ""
    # The confidence its verdict is judged at: 95%, or stricter where a side's processes were added until decided
    # (bench/judge/replication.py: each of several looks is judged at 1 - 5% / looks)
    confidence: float = CONFIDENCE
    note: str = ""  # what the interval holds beyond the two cells' processes (the runs' spread, for separate runs)
    # The confidence an equivalence (`same`) is judged at, where it differs from a difference's: a family's
    # threshold guards against differences called by chance; an equivalence keeps its own comparison's level
    same_confidence: float | None = None
    comparable: bool = True  # False: the sides did different work a step, and `reason` says how
    runs: ProcessSpread | None = None  # separate runs: the machine's run-to-run spread each side carries
    run_counts: tuple[int, int] = (1, 1)  # separate runs: how many runs each side's processes came from (A, B)
    # separate runs: what the run-to-run variance (runs.log_sd squared) is multiplied by in this ratio's; None:
    # runs_weight(run_counts), every run independent
    run_weight: float | None = None

    def runs_floor(self) -> float | None:
        """Separate runs: the interval's upper end over the ratio that the runs' spread alone would leave, however many
        processes a side (> 1 + the equivalence band: no number of processes decides "same", and only a change
        beyond it can be called); None within one run."""
        if self.runs is None:
            return None
        weight = self.run_weight if self.run_weight is not None else runs_weight(self.run_counts)
        spread = math.sqrt(weight) * self.runs.log_sd
        return math.exp(t_quantile((1 + self.confidence) / 2, self.runs.dof) * spread)

    def interval(self, confidence: float | None = None) -> tuple[float, float] | None:
        if self.log_se is None or self.value <= 0:
            return None
        half = t_quantile((1 + (confidence or self.confidence)) / 2, self.dof) * self.log_se
        return self.value * math.exp(-half), self.value * math.exp(half)

    def undecided(self, reason: str) -> Ratio:
        """The same ratio, kept out of any verdict for `reason` (beside any reason it already had)."""
        return dataclasses.replace(self, decidable=False, reason="; ".join(filter(None, [self.reason, reason])))

    def not_comparable(self, reason: str) -> Ratio:
        """The same ratio, of two cells that did different work a step: never a verdict, `reason` says how."""
        return dataclasses.replace(self.undecided(reason), comparable=False)

    def with_run_spread(self, spread: ProcessSpread, run_counts: tuple[int, int] = (1, 1),
                        weight: float | None = None) -> Ratio:
        """The same ratio of two cells measured in separate runs: each side's run moved its figure by the machine's
        run-to-run spread (ln sd), beyond its processes' spread, and the interval carries both. A side pooled from k
        independent runs (`run_counts`, A then B) carries that spread over k: the mean of k runs moves by
        sd / sqrt(k); `weight`: what the variance is multiplied by instead, where the runs are not all independent
        (bench/judge/across_runs.py)."""
        if self.log_se is None:
            return self
        weight = runs_weight(run_counts) if weight is None else weight
        variances = [self.log_se**2, weight * spread.log_sd**2]
        sides = "" if run_counts == (1, 1) else f"; {run_counts[0]} and {run_counts[1]} runs a side"
        held = f"separate runs: each side's run {spread.log_sd:.1%} ({spread.source}){sides}"
        return dataclasses.replace(
            self,
            log_se=math.sqrt(sum(variances)),
            dof=welch_dof(variances, [self.dof, spread.dof]),
            note="; ".join(filter(None, [self.note, held])),
            runs=spread,
            run_counts=run_counts,
            run_weight=weight,
        )

    def noted(self, note: str) -> Ratio:
        """The same ratio with `note` beside what it already notes."""
        return dataclasses.replace(self, note="; ".join(filter(None, [self.note, note])))

    def judged_at(self, confidence: float) -> Ratio:
        """The same ratio judged at `confidence` where that is stricter than its own."""
        return dataclasses.replace(self, confidence=max(self.confidence, confidence))

    def inverse(self) -> Ratio:
        return dataclasses.replace(self, value=1 / self.value)

    def to_dict(self) -> dict:
        interval = self.interval()
        return {
            "ratio": self.value,
            "low": interval[0] if interval else None,
            "high": interval[1] if interval else None,
            "confidence": self.confidence,
            "dof": None if math.isinf(self.dof) else self.dof,
            "decidable": self.decidable,
            "comparable": self.comparable,
            "reason": self.reason,
            "note": self.note,
        }


def runs_weight(run_counts: tuple[int, int]) -> float:
    """What the run-to-run variance is multiplied by in a ratio of sides pooled from (k_A, k_B) runs: 1/k_A + 1/k_B."""
    return sum(1 / k for k in run_counts)


def welch_dof(variances: list[float], dofs: list[float]) -> float:
    """Welch-Satterthwaite: the degrees of freedom of a sum of independently estimated variances."""
    total = sum(variances)
    terms = sum(v * v / d for v, d in zip(variances, dofs) if v > 0 and not math.isinf(d))
    return total * total / terms if terms > 0 else math.inf


def ratio(a: Estimate, b: Estimate) -> Ratio:
    """B / A with its interval (Welch on the log scale)."""
    value = b.center / a.center if a.center > 0 else math.nan
    if a.log_se is None or b.log_se is None or not math.isfinite(value) or value <= 0:
        return Ratio(value if math.isfinite(value) else 0.0, None, math.inf, False,
                     "no interval: " + "; ".join(e.note or e.basis for e in (a, b) if e.log_se is None))
    variances = [a.log_se**2, b.log_se**2]
    dof = welch_dof(variances, [a.dof, b.dof])
    undecided = [e for e in (a, b) if not e.decidable]
    reason = "; ".join(dict.fromkeys(e.note or e.basis for e in undecided))
    return Ratio(value, math.sqrt(sum(variances)), dof, not undecided, reason)


def geometric_mean(ratios: list[Ratio], shared_log_var: float = 0.0, shared_dof: float = math.inf) -> Ratio | None:
    """The geometric mean of independent ratios (the rows of one model), its variance the mean of theirs over k;
    `shared_log_var` adds a part every ratio shares (one process per column measured every point)."""
    usable = [r for r in ratios if r.log_se is not None and r.value > 0]
    if not usable:
        return None
    k = len(usable)
    value = math.exp(statistics.fmean(math.log(r.value) for r in usable))
    variances = [r.log_se**2 / k**2 for r in usable] + ([shared_log_var] if shared_log_var > 0 else [])
    dofs = [r.dof for r in usable] + ([shared_dof] if shared_log_var > 0 else [])
    undecided = [r.reason for r in usable if not r.decidable]
    return Ratio(value, math.sqrt(sum(variances)), welch_dof(variances, dofs), not undecided and k == len(ratios),
                 "; ".join(dict.fromkeys(undecided)) or ("" if k == len(ratios) else "a ratio without an interval"),
                 max(r.confidence for r in usable))


def stalls(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """(mean, median) of steps whose mean lies more than the equivalence band above the median, beyond both their
    intervals (the mean's Student t, the median's order statistics): a minority of slow steps (stalls, collections,
    recompiles) that the median, the suite's figure, does not move for and a published mean does. Ordinary skew
    (a mean a few percent above the median) is not flagged. None otherwise, or with too few steps."""
    positive = sorted(v for v in values if v > 0)
    found = median_interval(positive, confidence) if len(positive) >= MIN_STEPS_FOR_INTERVAL else None
    if found is None or len(positive) < 2:
        return None
    mean, sd = statistics.fmean(positive), statistics.stdev(positive)
    mean_low = mean - t_quantile((1 + confidence) / 2, len(positive) - 1) * sd / math.sqrt(len(positive))
    median, high = statistics.median(positive), found[1]
    return (mean, median) if mean_low > high * (1 + EQUIVALENCE_BAND) else None


def p_value(r: Ratio) -> float | None:
    """The two-sided p-value of the ratio's difference from 1 (a t test on its logarithm); None without an
    interval. Where the ratio is judged stricter than 95% (processes added over several looks), the p-value is scaled
    by the looks, as Bonferroni over them, so that one family-wise threshold serves every comparison."""
    if r.log_se is None or r.value <= 0 or not r.decidable:
        return None
    if r.log_se == 0:
        return 0.0
    p = 2 * (1 - t_cdf(abs(math.log(r.value)) / r.log_se, r.dof))
    looks = (1 - CONFIDENCE) / (1 - r.confidence) if r.confidence < 1 else 1.0
    return min(1.0, p * max(looks, 1.0))


def benjamini_hochberg(pvalues: list[float], q: float = 1 - CONFIDENCE) -> float:
    """The Benjamini-Hochberg threshold of a family of comparisons: the largest k / m * q with the k-th smallest
    p-value at or below it (reject those), else q / m (nothing is rejected at it, and the smallest p must clear it).
    Judging each comparison at 1 - threshold keeps the share of chance calls among the differences called at most q."""
    m = len(pvalues)
    if not m:
        return q
    if (library := scipy_stats()) is not None:
        rejected = int((library.false_discovery_control(pvalues, method="bh") <= q).sum())
    else:
        ranked = sorted(pvalues)
        rejected = max((k for k in range(1, m + 1) if ranked[k - 1] <= k / m * q), default=0)
    return max(rejected, 1) / m * q


def family_judged(r: Ratio, threshold: float) -> Ratio:
    """A ratio judged as one of a family whose Benjamini-Hochberg threshold is `threshold`: a difference at
    1 - threshold, scaled as its own confidence is (processes added over several looks); an equivalence at its own."""
    own = r.same_confidence or r.confidence
    return dataclasses.replace(r.judged_at(1 - threshold * (1 - r.confidence) / (1 - CONFIDENCE)), same_confidence=own)


def family_threshold(ratios: list[Ratio | None]) -> tuple[int, float]:
    """How many of the ratios can be judged (those with a p-value) and the Benjamini-Hochberg threshold each is judged
    at as one of that family."""
    pvalues = [p for r in ratios if r is not None and (p := p_value(r)) is not None]
    return len(pvalues), benjamini_hochberg(pvalues)


def judged_as_family(ratios: list[Ratio | None]) -> tuple[list[Ratio | None], int, float]:
    """Each ratio judged as one of the family they make (family_threshold), with how many were judged together and
    the threshold; a ratio without a p-value as it was."""
    together, threshold = family_threshold(ratios)
    judged = [family_judged(r, threshold) if r is not None and p_value(r) is not None else r for r in ratios]
    return judged, together, threshold


def verdict(r: Ratio | None, band: float = EQUIVALENCE_BAND) -> str:
    """B against A: `slower` (B slower: the whole interval above 1), `faster` (below 1), `same` (the interval holds 1
    and lies within the band: equivalence shown), else `inconclusive`; a ratio that cannot decide (steps only, a noisy
    side, other processors) is inconclusive. A difference is called before an equivalence: a real 3% is `slower`
    (within 5%: verdict_text says so), never `same`. Two cells that did different work are `not comparable`."""
    if r is not None and not r.comparable:
        return NOT_COMPARABLE
    if r is None or not r.decidable or (interval := r.interval()) is None:
        return INCONCLUSIVE
    low, high = interval
    if low > 1:
        return SLOWER
    if high < 1:
        return FASTER
    low, high = r.interval(r.same_confidence) if r.same_confidence else interval
    if low >= 1 / (1 + band) and high <= 1 + band:
        return SAME
    return INCONCLUSIVE


def verdict_text(r: Ratio | None, band: float = EQUIVALENCE_BAND) -> str:
    """The verdict as a reader reads it: a difference whose whole interval lies within the band says so ("slower,
    within 5%"): real, and smaller than the band."""
    found = verdict(r, band)
    if found in (SLOWER, FASTER) and (interval := r.interval()) is not None:
        low, high = interval
        if low >= 1 / (1 + band) and high <= 1 + band:
            return f"{found}, within {band:.0%}"
    return found


def claim_band(claimed: float, factor: float) -> tuple[float, float]:
    """The ratios that agree with a published "about `claimed`x": within `factor` of it either way, and (for a claim
    of a difference, not of parity) its distance from 1 on a log scale within `factor` of the claim's too, so that
    a claimed 1.4x overhead is not met by none (1.02x lies within 1.5x of 1.4, yet says there is no overhead)."""
    low, high = claimed / factor, claimed * factor
    if abs(math.log(claimed)) >= math.log(1 + EQUIVALENCE_BAND):  # a claimed difference: its size counts
        exponents = sorted((1 / factor, factor))
        by_size = sorted((claimed ** exponents[0], claimed ** exponents[1]))
        low, high = max(low, by_size[0]), min(high, by_size[1])
    return low, high


def claim_rule(factor: float) -> str:
    """claim_band in words, for the reports that judge published ratios with it."""
    return (
        f"within {factor:g}x of it either way and, for a claimed difference, its size (the distance from 1 on a log "
        f"scale) within {factor:g}x of the claim's"
    )


def claim_within(r: Ratio | None, claimed: float, factor: float) -> str:
    """A published ratio re-tested: `holds` when our whole interval lies within its band (claim_band), `does not
    hold` when it lies wholly outside, else `inconclusive`."""
    if r is None or not r.decidable or (interval := r.interval()) is None:
        return INCONCLUSIVE
    low, high = interval
    band_low, band_high = claim_band(claimed, factor)
    if low >= band_low and high <= band_high:
        return HOLDS
    if high < band_low or low > band_high:
        return DOES_NOT_HOLD
    return INCONCLUSIVE


def claim_above(r: Ratio | None, threshold: float) -> str:
    """A published "more than `threshold`" re-tested: holds when our whole interval is above it, does not hold when
    wholly below, else inconclusive."""
    if r is None or not r.decidable or (interval := r.interval()) is None:
        return INCONCLUSIVE
    low, high = interval
    return HOLDS if low > threshold else DOES_NOT_HOLD if high < threshold else INCONCLUSIVE


def fmt_ratio(r: Ratio | None) -> str:
    """'1.23× (1.10–1.37)': significant digits, so that no ratio prints as 0.00×."""
    if r is None or not math.isfinite(r.value) or r.value <= 0:
        return "n/a"
    interval = r.interval()
    text = fmt_factor(r.value)
    return text + (f" ({fmt_factor(interval[0], unit='')}–{fmt_factor(interval[1], unit='')})" if interval else "")


def fmt_factor(value: float, unit: str = "×") -> str:
    """Three significant digits (0.000123×, 0.0812×, 1.23×, 258×); scientific beyond the range a ratio
    normally takes (4.05e-23×: the end of an interval measured under load)."""
    if value == 0 or not math.isfinite(value):
        return f"{value}{unit}"
    if not 1e-4 <= abs(value) < 1e4:
        return f"{value:.2e}{unit}"
    rounded = float(f"{value:.3g}")  # 0.99997 is 1.00, not 1.000
    digits = max(0, 2 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{digits}f}{unit}"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation between order statistics (NumPy's default)."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# -- noise gates


@dataclass(frozen=True)
class Noise:
    noisy: bool
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"noisy": self.noisy, "reasons": list(self.reasons)}


def noise_reasons(timed: list[float], reference: dict | None = None, quiet_reference_ms: float | None = None,
                  device_ms: list[float] | None = None, device_quiet_ms: float | None = None,
                  throttled: list[str] | None = None) -> Noise:
    """Why a process's timed steps were taken on a disturbed machine: the drift probe far from its quiet value
    before or after it (`reference`: the readings that gate it), the device's own reference (a GPU cell's fixed
    matmul, `device_ms`) beyond DEVICE_REFERENCE_FACTOR of its quiet value, a GPU throttle reason that slows it
    (`throttled`), a spread beyond SPREAD_LIMIT, or a jump between the first and second half of its steps."""
    reasons = []
    if reference and quiet_reference_ms and quiet_reference_ms > 0:
        worst = max((v for v in reference.values() if isinstance(v, (int, float)) and not isinstance(v, bool)
                     and v > 0), default=None)  # fmt: skip
        if worst is not None and worst > REFERENCE_FACTOR * quiet_reference_ms:
            reasons.append(
                f"the drift probe read {worst:.3g} ms beside it, {worst / quiet_reference_ms:.1f}x its quiet "
                f"{quiet_reference_ms:.3g} ms (limit {REFERENCE_FACTOR:g}x)"
            )
    if device_ms and device_quiet_ms and device_quiet_ms > 0:
        worst = max(device_ms)
        if worst > DEVICE_REFERENCE_FACTOR * device_quiet_ms:
            reasons.append(
                f"the device reference read {worst:.3g} ms beside it, {worst / device_quiet_ms:.2f}x its quiet "
                f"{device_quiet_ms:.3g} ms (limit {DEVICE_REFERENCE_FACTOR:g}x)"
            )
    if throttled:
        reasons.append(f"the GPU was throttled ({', '.join(throttled)}) as it started or ended")
    if len(timed) >= 3 and statistics.median(timed) > 0:
        p10, p90 = percentile(timed, 10), percentile(timed, 90)
        if p10 <= 0:
            reasons.append("its steps' p10 is zero or less (a derived figure under noise)")
        elif p90 / p10 > SPREAD_LIMIT:
            reasons.append(f"its steps' p10-p90 spread is {p90 / p10:.2f}x (p90 over p10; limit {SPREAD_LIMIT:g}x)")
    if len(timed) >= 6:
        half = len(timed) // 2
        first, second = statistics.median(timed[:half]), statistics.median(timed[half:])
        if first > 0 and second > 0 and max(second / first, first / second) > JUMP_LIMIT:
            reasons.append(
                f"its second half's median is {second / first:.2f}x its first half's (limit {JUMP_LIMIT:g}x either way)"
            )
    return Noise(bool(reasons), reasons)
