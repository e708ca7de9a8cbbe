"""One result file per cell: config, measurements, status and provenance together, written atomically."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.atomic import claim_new_file, write_json_atomic  # noqa: F401  (also imported from here by the cell and the cluster code)
from bench.base.errors import BenchError
from bench.base.provenance import DISTURBING_THROTTLE, machine_slug, throttle_reasons
from bench.base.runlock import STUDY_FOLDERS
from bench.base.stats import (
    EQUIVALENCE_BAND,
    Estimate,
    Noise,
    ProcessSpread,
    estimate,
    noise_reasons,
    stalls,
)
from bench.base.timing import Stats
from bench.catalogue.backends import get_backend
from bench.catalogue.registry import Cell
from bench.catalogue.work import Work, cell_work
from bench.record.result_checks import check_cell_schema, check_stored_figures, check_stored_interval
from bench.record.result_text import LINE_WIDTH, fit_line, interval_text, sampling_text
from bench.record.schema import validate_result
from bench.record.text import plural

SCHEMA_VERSION = 2  # 2 added first_step_contains, steadiness, compile_events, derived, reference; killed, unsteady
# (and later, optional: device_memory, gpu_state, generate_split)
READABLE_VERSIONS = (1, 2)  # older files are migrated on load (the new fields take their defaults)
# What a process's `reference` may hold: the readings before and after it and how each settled (bench/measure/drift.py Reading)
REFERENCE_KEYS = {"before_ms", "after_ms", "settling"}
PRECISION_MODES = ("float32_matmul", "float32_convolution", "setting")  # a precision record's own keys; the rest: flags
STATUSES = ("ok", "oom", "timeout", "error", "unsupported", "killed", "unsteady", "oom-predicted")
HISTORY = "history"  # earlier results of the same cell, moved aside rather than overwritten
# Folders under results/ that hold no current result of the published table (slurm: job files; grid: the
# inference grid study's own results, read by bench/studies/grid/page.py; tuning: the tuning study's own results folder,
# `make tuning`, rendered on its own by `make table`).
# gpu-check: its own report and short cells; ceilings: `make ceilings`' machine files (bench/run/ceilings.py);
# overhead: the framework-overhead study (bench/studies/overhead/, make overhead); noise: the machine's noise study (make noise);
# sweep: the release sweeps and bisects (bench/studies/sweep/, make sweep, make bisect); parity: make parity's checks;
# ab: make ab's comparisons, each side's processes an ordinary results folder of its own (bench/studies/ab/)
NOT_RESULTS = {HISTORY, "logs", "figures", "slurm", "quarantine", *STUDY_FOLDERS}
QUARANTINE = "quarantine"  # where `bench validate --quarantine` moves unreadable result files
# Files the suite keeps among a results folder's results that are no result, by name: a plan (plan.json,
# plan-<profile>.json, bench/plan/) and make history-triage's record (bench/studies/history/triage.py). Every reader of the
# results (table, export, validate, a run's check) passes them by; validate reads each as its own kind.
TRIAGE_FILE = "history-triage.json"


def is_plan_file(name: str) -> bool:
    return name == "plan.json" or (name.startswith("plan-") and name.endswith(".json"))


def is_kept_file(name: str) -> bool:
    """A file the suite keeps beside results that is no result (a plan, the triage record)."""
    return is_plan_file(name) or name == TRIAGE_FILE


class CorruptResult(BenchError):
    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


class NewerSchema(BenchError):
    """A file written by newer code: refused whole rather than half-understood."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


@dataclass
class Run:
    """One process's measurement of a cell (a cell with --repeats R has R runs)."""

    status: str
    message: str | None = None
    first_step_ms: float | None = None  # trace + compile + first execution
    warmup_ms: list[float] = field(default_factory=list)
    timed_ms: list[float] = field(default_factory=list)  # raw per-step figures, in order
    windows_ms: list[float] | None = None  # the measured windows, when timed_ms is derived from them
    setup_s: float | None = None
    wall_s: float | None = None
    tokens_per_step: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    framework: dict[str, Any] = field(default_factory=dict)
    process: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    first_step_contains: str | None = None  # what the first window holds, e.g. "trace + compile + the first step"
    steadiness: dict[str, Any] | None = None
    compile_events: list[int] | None = None  # compile/retrace events per raw window
    derived: bool = False  # timed_ms derived from windows_ms: may be zero or negative under noise, raw windows never
    reference: dict[str, float] | None = None
    # The framework's own peak device memory ({"framework", "device", "peak_allocated_gib", "peak_reserved_gib",
    # "source", "plan_gib"}): present whenever the framework used a GPU (bench/measure/frameworks.py device_memory).
    device_memory: dict[str, Any] | None = None
    gpu_state: dict[str, Any] | None = None
    # generate only: the call split into prefill and decode (TTFT, TPOT, the agreement check) with the raw windows of
    # its one-token and partial calls (bench/base/generate_split.py); absent in results written before it
    generate_split: dict[str, Any] | None = None
    # How the process chose its number of timed steps: the rule, the precision reached, what stopped it
    # (bench/base/timing.py)
    sampling: dict[str, Any] | None = None
    # The noise gates as the orchestrator judged them when it wrote the result (bench/base/stats.py noise_reasons)
    noise: dict[str, Any] | None = None
    # A GPU cell's own drift reference: a fixed matmul on its device before the model was built and after the timed
    # steps ({"before": reading, "after": reading}, bench/measure/frameworks.py device_reference); None on a CPU and in
    # results written before it
    device_reference: dict[str, Any] | None = None

    def stats(self) -> Stats | None:
        return Stats.of(self.timed_ms, allow_negative=self.derived) if self.status == "ok" and self.timed_ms else None

    def to_dict(self) -> dict[str, Any]:
        stats = self.stats()
        return {**self.__dict__, "stats": stats.to_dict() if stats else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        data = dict(data)
        data.pop("stats", None)
        run = cls(**data)
        if run.status not in STATUSES:
            raise ValueError(f"run status {run.status!r} is not one of {STATUSES}")
        if not isinstance(run.derived, bool):
            raise ValueError(f"run derived must be true or false, got {run.derived!r}")
        if any(not isinstance(w, (int, float)) or w < 0 for w in run.windows_ms or []):
            raise ValueError(f"raw windows must be non-negative: {run.windows_ms}")
        if run.reference is not None and (
            not {"before_ms", "after_ms"} <= set(run.reference) or set(run.reference) - REFERENCE_KEYS
        ):
            raise ValueError(f"run reference must have before_ms and after_ms (and only {sorted(REFERENCE_KEYS)}), "
                             f"got {run.reference!r}")  # fmt: skip
        return run

    def gated_reference(self, start_ms: float | None = None, first: bool = False) -> dict[str, float]:
        """The drift-probe readings beside this process that its noise gate applies to. A reading warmed until it
        settled (bench/measure/drift.py: `reference.settling`) gates it; one still speeding up when the warm-up ended is
        cold, recorded and not gated (the record says so: `settled` false). In a record from before readings were
        warmed (no `settling`), the first process's before reading was its run's start reading (its `start_ms`),
        taken before the run's ceilings probes (15 s on the first GPU run) in a process just started: on the lent
        H200 each orchestrator process's first reading read 4.1-4.9x its run's quietest and every reading after a
        process at most 1.64x. Such a reading cannot be told from a cold one, so it gates nothing; the reading after
        that process and its steps' own gates still do."""
        reference = self.reference or {}
        readings = {k: v for k in ("before_ms", "after_ms") if isinstance(v := reference.get(k), (int, float))
                    and not isinstance(v, bool)}  # fmt: skip
        settling = reference.get("settling")
        if isinstance(settling, dict):
            for key, side in (("before_ms", "before"), ("after_ms", "after")):
                if (settling.get(side) or {}).get("settled") is False:
                    readings.pop(key, None)
        elif first and start_ms is not None and readings.get("before_ms") == start_ms:
            readings.pop("before_ms", None)
        return readings

    def device_readings(self) -> list[float]:
        """The device reference's readings beside this process, in ms (before the model was built, after its timed
        steps); empty on a CPU, where it failed, and in records from before it."""
        found = [(self.device_reference or {}).get(k) for k in ("before", "after")]
        return [r["ms"] for r in found if isinstance(r, dict) and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0]

    def device_key(self) -> str:
        """Which device the device reference ran on (the GPU's id as gpu_state records it), so that each GPU of a
        run has its own quiet value."""
        return str((self.gpu_state or {}).get("gpu") or "")

    def throttle_reasons(self) -> list[str]:
        """The GPU's slowdowns that disturb a measurement, active as the process started or ended (bench/base/provenance.py
        throttle_reasons of gpu_state), each once."""
        states = [(self.gpu_state or {}).get(k) for k in ("start", "end")]
        found = [name for state in states if isinstance(state, dict) for name in throttle_reasons(state)]
        return [name for name in dict.fromkeys(found) if name in DISTURBING_THROTTLE]

    def noise_gates(self, quiet_reference_ms: float | None, device_quiet_ms: float | None = None,
                    start_ms: float | None = None, first: bool = False) -> Noise:
        """This process's noise gates (bench/base/stats.py noise_reasons) on its gated readings (gated_reference), its
        device reference against the run's quietest on that device, and its GPU's throttle reasons."""
        return noise_reasons(self.timed_ms, self.gated_reference(start_ms, first), quiet_reference_ms,
                             self.device_readings(), device_quiet_ms, self.throttle_reasons())  # fmt: skip


def device_quiet(runs: list[Run]) -> dict[str, float]:
    """Per device (Run.device_key): the quietest device-reference reading of these processes."""
    out: dict[str, float] = {}
    for run in runs:
        for ms in run.device_readings():
            key = run.device_key()
            out[key] = min(out.get(key, ms), ms)
    return out


@dataclass
class Result:
    cell: Cell
    runs: list[Run]
    unit: str
    provenance: dict[str, Any]
    created_at: str
    config: dict[str, Any] | None = None  # the cell's resolved configuration and each value's source (bench/catalogue/config.py)

    @property
    def status(self) -> str:
        bad = [r for r in self.runs if r.status != "ok"]
        return bad[0].status if bad else "ok"

    @property
    def message(self) -> str | None:
        bad = [r for r in self.runs if r.status != "ok"]
        return bad[0].message if bad else None

    def summary(self) -> Stats | None:
        """Statistics of every timed step of every run, pooled."""
        if self.status != "ok":
            return None
        return Stats.of([t for r in self.runs for t in r.timed_ms], allow_negative=any(r.derived for r in self.runs))

    def peak_rss_gib(self) -> float | None:
        """The most resident memory any of its processes held, in GiB; None where none recorded it."""
        peaks = [p for run in self.runs if isinstance(p := (run.process or {}).get("peak_rss_gib"), (int, float))]
        return max(peaks) if peaks else None

    def peak_device_gib(self) -> float | None:
        """The most device memory its framework allocated in any of its processes, in GiB; None where none recorded."""
        peaks = [p for run in self.runs if isinstance(run.device_memory, dict)
                 and isinstance(p := run.device_memory.get("peak_allocated_gib"), (int, float))]  # fmt: skip
        return max(peaks) if peaks else None

    def stalled(self) -> list[tuple[int, tuple[float, float]]]:
        """(index, (mean, median)) of each process whose mean step lies above its median beyond both their intervals."""
        return [(i, f) for i, run in enumerate(self.runs) if run.timed_ms and (f := stalls(run.timed_ms))]

    def stalls(self) -> str | None:
        """Where a process's mean step lies above its median beyond both their intervals (bench/base/stats.py stalls): a
        minority of slow steps that the median figure does not move for, said, not hidden."""
        found = self.stalled()
        if not found:
            return None
        return "; ".join(
            (f"process {i + 1}: " if len(self.runs) > 1 else "") + f"mean {mean:.4g} above median {median:.4g}"
            for i, (mean, median) in found
        ) + f" (more than {EQUIVALENCE_BAND:.0%} above, beyond both intervals: a minority of slow steps)"

    def repeat_spread(self) -> Stats | None:
        """Spread of the per-process medians: how much a whole re-run moves the figure."""
        medians = [r.stats().median for r in self.runs if r.stats()]
        return (
            Stats.of(medians, allow_negative=any(r.derived for r in self.runs))
            if self.status == "ok" and len(medians) > 1
            else None
        )

    def estimate(self, spread: ProcessSpread | None = None) -> Estimate | None:
        """The cell's figure and its interval, from its processes' timed steps (bench/base/stats.py); `spread`: the
        machine's process-to-process spread, for a cell of one process. None unless ok."""
        if self.status != "ok":
            return None
        return estimate([r.timed_ms for r in self.runs if r.timed_ms], spread)

    def figure(self) -> float | None:
        """The cell's headline figure: the geometric mean of its processes' medians (one process: its median)."""
        found = self.estimate()
        return found.center if found else None

    def float32_precision(self) -> dict[str, str] | None:
        """What the cell's float32 matrix products and convolutions computed in, as its framework recorded it (bench/
        frameworks.py precision_record): {"matmul": "tf32" or "float32", "convolution": ..., "setting": its words};
        None where no process recorded it. A record from before `setting` is named by its flags; one from before the
        convolution's mode (JAX, TensorFlow: one setting for both) takes the matmul's."""
        for run in self.runs:
            found = (run.framework or {}).get("precision") or {}
            if found.get("float32_matmul"):
                flags = ", ".join(f"{k} {v}" for k, v in found.items() if k not in PRECISION_MODES)
                return {"matmul": found["float32_matmul"],
                        "convolution": found.get("float32_convolution") or found["float32_matmul"],
                        "setting": found.get("setting") or flags}  # fmt: skip
        return None

    def start_ms(self) -> float | None:
        """The drift probe's reading as the cell's run started (provenance.reference.start_ms); None where unrecorded."""
        value = (self.provenance.get("reference") or {}).get("start_ms")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def process_noise(self, index: int, quiet_reference_ms: float | None,
                      device_quiet_ms: dict[str, float] | None = None) -> Noise:
        """The noise gates of the cell's process `index` (Run.noise_gates), its run's start reading told apart."""
        run = self.runs[index]
        device = (device_quiet_ms if device_quiet_ms is not None else device_quiet(self.runs)).get(run.device_key())
        return run.noise_gates(quiet_reference_ms, device, self.start_ms(), index == 0)

    def noise(self, quiet_reference_ms: float | None = None,
              device_quiet_ms: dict[str, float] | None = None) -> Noise:
        """The noise gates over every process of the cell (process_noise): noisy if any process is."""
        reasons = []
        for i, run in enumerate(self.runs):
            if run.status != "ok" or not run.timed_ms:
                continue
            found = self.process_noise(i, quiet_reference_ms, device_quiet_ms)
            prefix = f"process {i + 1}: " if len(self.runs) > 1 else ""
            reasons += [prefix + reason for reason in found.reasons]
        return Noise(bool(reasons), reasons)

    def tokens_per_s(self) -> float | None:
        summary = self.summary()
        tokens = self.runs[0].tokens_per_step if self.runs else None
        return tokens / (summary.median / 1000) if summary and tokens else None

    def to_dict(self) -> dict[str, Any]:
        summary, spread = self.summary(), self.repeat_spread()
        return {
            "schema_version": SCHEMA_VERSION,
            "cell": self.cell.to_dict(),
            "status": self.status,
            "message": self.message,
            "unit": self.unit,
            "summary": summary.to_dict() if summary else None,
            "repeat_spread": spread.to_dict() if spread else None,
            "interval": found.to_dict() if (found := self.estimate()) else None,
            "tokens_per_s": self.tokens_per_s(),
            "runs": [r.to_dict() for r in self.runs],
            "provenance": self.provenance,
            "created_at": self.created_at,
            **({"config": self.config} if self.config is not None else {}),
            **({"work": work} if (work := self.work_counts()) else {}),
        }

    def work(self) -> Work | None:
        """One step's work, counted from the cell's shape as its run built it (bench/catalogue/work.py: recomputed, never read
        back; the build from the settings its run recorded); None where the model has no rule or today's registry
        no longer knows the cell."""
        cell = self.cell
        settings = next((run.settings for run in self.runs if run.settings), {})
        try:
            shape = cell.spec.shape(cell.profile)
            return cell_work(cell.model, get_backend(cell.backend).family, cell.task, cell.batch_size, shape, settings)
        except (BenchError, KeyError):
            return None

    def work_counts(self) -> dict[str, Any] | None:
        """work() as the result file writes it: FLOPs and least bytes, the dtype, the rule's formula."""
        work = self.work()
        return work.to_dict() if work else None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Validates the schema only, never today's registry: an archived cell stays readable after the registry
        (profiles.toml, the reference CSV, the models) has moved on."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        version = data.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise NewerSchema(
                f"schema_version {version} is newer than this code reads ({SCHEMA_VERSION}); update the code"
            )
        if version not in READABLE_VERSIONS:
            raise ValueError(f"schema_version {version!r}, expected one of {READABLE_VERSIONS}")
        missing = {"cell", "status", "unit", "runs", "provenance", "created_at"} - set(data)
        if missing:
            raise ValueError(f"missing keys {sorted(missing)}")
        if data["status"] not in STATUSES:
            raise ValueError(f"status {data['status']!r} is not one of {STATUSES}")
        if not data["runs"]:
            raise ValueError("no runs")
        check_cell_schema(data["cell"])
        runs = [Run.from_dict(r) for r in data["runs"]]  # a version-1 run lacks the new fields: they take defaults
        result = cls(
            Cell.from_dict(data["cell"], validate=False),
            runs,
            data["unit"],
            data["provenance"],
            data["created_at"],
            data.get("config"),
        )
        if result.status != data["status"]:
            raise ValueError(f"status {data['status']!r} disagrees with its runs ({result.status!r})")
        result.summary()  # validates the raw step times
        check_stored_figures(data, result)
        check_stored_interval(data, result)
        return result

    def relative_path(self) -> Path:
        return result_path(Path(), self.cell, self.provenance.get("machine", {}))

    def write(self, results_dir: Path) -> Path:
        """Write atomically; an earlier result of the same cell moves to history/, never lost."""
        data = self.to_dict()
        validate_result(data)  # the published format (docs/schema/); a no-op without jsonschema
        path = results_dir / self.relative_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        archived = None
        if path.exists():
            archived = history_name(path, load(path))
            try:
                os.replace(path, archived)
            except BaseException:
                archived.unlink(missing_ok=True)  # no empty file left in history/
                raise
        try:
            write_json_atomic(path, data)
        except BaseException:
            if archived is not None:  # the write failed (a full disk): the earlier result stays the current one
                os.replace(archived, path)
            raise
        return path

    def write_to_history(self, results_dir: Path) -> Path:
        """Write into history/ beside the cell's current result, which stays current: a record older than it."""
        data = self.to_dict()
        validate_result(data)
        path = history_name(results_dir / self.relative_path(), self)
        write_json_atomic(path, data)
        return path

    def describe(self) -> str:
        """One line: the figure with its 95% interval, the steps' spread, how sampling ended, the first step, and the
        noise gates as recorded when the result was written."""
        if self.status != "ok":
            return f"{self.status}: {self.message}"
        s = self.summary()
        text = f"{interval_text(self.estimate(), self.unit)}; steps: median {s.median:.4g}, mean {s.mean:.4g} (p10 "
        cv = f"cv {s.cv:.1%}" if s.min > 0 else "no cv: a step figure is zero or negative"  # mean <= 0 stores 0
        text += f"{s.p10:.4g}, p90 {s.p90:.4g}, {cv}, n={s.count})"
        if stalled := self.stalls():
            text += f"; stalls: {stalled}"
        if sampling := sampling_text(self.runs):
            text += f"; sampling: {sampling}"
        if self.runs[0].first_step_ms is not None:
            text += f"; first step {self.runs[0].first_step_ms:.0f} ms"
        if noisy := self.recorded_noise():
            text += "; noisy: " + "; ".join(noisy)
        if self.tokens_per_s():
            text += f"; {self.tokens_per_s():.1f} tokens/s"
        if short := self.short_of_plan():
            text += f"; only {short[0]} of {short[1]} repeats"
        return text

    def brief(self, width: int = LINE_WIDTH, key: str | None = None) -> str:
        """describe() in one console line of at most `width` characters: the cell's key (or `key`), its figure with
        its interval and processes, or its status and the start of its message; then one word and a count for each
        warning describe() spells out (the noise gates' reasons, stalls, processes short of the plan). The reasons
        themselves are the result file's and describe()'s."""
        key = key or self.cell.key
        if self.status != "ok":
            # its message as far as the line holds it (the log and the result file hold it whole)
            return fit_line(key, self.status, [self.message or ""], width, sep=": ", item_chars=width)
        figure = "ok, " + interval_text(self.estimate(), self.unit)
        if "process" not in figure:  # an interval that does not say what it stands on
            figure += f" ({plural(sum(1 for r in self.runs if r.timed_ms), 'process')})"
        words = []
        if noisy := self.recorded_noise():
            words.append(f"noisy ({plural(len(noisy), 'reason')})")
        if stalled := self.stalled():
            words.append(f"stalls ({plural(len(stalled), 'process')})")
        if short := self.short_of_plan():
            words.append(f"only {short[0]} of {short[1]} repeats")
        return fit_line(key, figure, words, width)

    def recorded_noise(self) -> list[str]:
        """Every noise gate's reason as recorded when the result was written (Run.noise), each process's named where
        the cell has several."""
        noisy = []
        for i, run in enumerate(self.runs):
            if (run.noise or {}).get("noisy"):
                prefix = f"process {i + 1}: " if len(self.runs) > 1 else ""
                noisy += [prefix + reason for reason in run.noise.get("reasons") or []]
        return noisy

    def short_of_plan(self) -> tuple[int, int] | None:
        """(processes, planned) of an interrupted run, which is not the figure asked for; None otherwise."""
        planned = self.provenance.get("repeats_planned")
        return (len(self.runs), planned) if isinstance(planned, int) and len(self.runs) < planned else None


def result_path(results_dir: Path, cell: Cell, machine: dict[str, Any]) -> Path:
    """Where a cell's current result lives: one folder per profile and machine; another stack than today's in its
    own subfolder (stack-<name>), so neither stack's results overwrite or shadow the other's."""
    folder = results_dir / cell.profile / machine_slug(machine)
    stack = getattr(cell, "stack", "today")
    return (folder if stack == "today" else folder / f"stack-{stack}") / f"{cell.key}.json"


def history_name(path: Path, result: Result) -> Path:
    """A new name in history/ beside a current result's path for `result`: <key>.<created_at>[.n].json."""
    stamp = result.created_at.replace(":", "").replace("+", "Z")
    return reserve_new_name(path.parent / HISTORY, f"{result.cell.key}.{stamp}")


def reserve_new_name(folder: Path, stem: str) -> Path:
    """A file name in `folder` that nothing else has or will take: created empty with O_EXCL, the first free of
    <stem>.json, <stem>.1.json, ... (created_at has one-second resolution; two results can share a second)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = claim_new_file(folder / (f"{stem}.json" if n == 0 else f"{stem}.{n}.json") for n in range(1_000_000))
    if path is None:
        raise BenchError(f"no free history name for {stem} in {folder}")
    return path


def task_unit(cell: Cell) -> str:
    """The unit of a cell's figures comes from its task, whatever the status (a failed generate cell is ms/call)."""
    return cell.spec.task(cell.task).unit


def load(path: Path) -> Result:
    try:
        text = Path(path).read_text()
        data = json.loads(text)
        result = Result.from_dict(data)
        validate_result(data, source=text)  # after from_dict, whose messages come first; then the published schema
        return result
    except NewerSchema as e:
        raise NewerSchema(f"cannot read result file {path}: {e}", Path(path)) from None
    except (OSError, ValueError, TypeError, KeyError, BenchError) as e:
        raise CorruptResult(f"cannot read result file {path}: {e}", Path(path)) from None


def result_files(results_dir: Path) -> list[Path]:
    """Current result files (not history/, not temporaries, not a file the suite keeps beside them: a plan,
    plan.json or plan-<profile>.json, or the triage record, at the top or in a sub-folder with results of its own such
    as cpu-full/)."""
    if not results_dir.exists():
        return []
    return sorted(
        p
        for p in results_dir.rglob("*.json")
        if not NOT_RESULTS & set(p.relative_to(results_dir).parts)
        and not p.name.startswith(".")
        and not is_kept_file(p.name)
    )


def other_json_files(results_dir: Path, read: set[Path]) -> list[Path]:
    """Every JSON file under the folder that is not in `read` (the files already checked as results), but those
    moved to quarantine/ (unreadable by design) and hidden ones (temporaries, locks)."""
    if not results_dir.is_dir():
        return []
    return sorted(
        p
        for p in results_dir.rglob("*.json")
        if p not in read
        and QUARANTINE not in p.relative_to(results_dir).parts
        and not any(part.startswith(".") for part in p.relative_to(results_dir).parts)
        and p.is_file()
    )


def load_each(results_dir: Path) -> tuple[list[tuple[Path, Result]], list[CorruptResult | NewerSchema]]:
    """Every current result file read: the readable ones with their paths, and an error naming each other one."""
    loaded, errors = [], []
    for path in result_files(results_dir):
        try:
            loaded.append((path, load(path)))
        except (CorruptResult, NewerSchema) as e:
            errors.append(e)
    return loaded, errors


def unreadable_error(errors: list[CorruptResult | NewerSchema], results_dir: Path) -> BenchError:
    """One error naming every unreadable file, what is wrong with each, and the fix."""
    lines = [str(e) for e in errors]
    if all(isinstance(e, NewerSchema) for e in errors):  # not broken: written by newer code ("update the code")
        return NewerSchema("\n".join(lines))
    them = "it" if len(errors) == 1 else f"these {len(errors)} files"
    fix = f"fix: move {them} out of {results_dir}"
    if any(e.path is None or is_suite_result_file(e.path, results_dir) for e in errors):  # what --quarantine moves
        fix += (
            f", or run `python -m bench validate --results-dir {results_dir} --quarantine` "
            f"to move every unreadable result file to {results_dir / QUARANTINE}/"
        )
    lines.append(fix)
    return CorruptResult("\n".join(lines))


def load_all(results_dir: Path) -> list[Result]:
    """Every current result; any unreadable file raises, naming every one of them and the fix."""
    loaded, errors = load_each(results_dir)
    if errors:
        raise unreadable_error(errors, results_dir)
    return [result for _, result in loaded]


# A result file's name: a cell key (bench/catalogue/registry.py Cell.key) and .json
RESULT_NAME = re.compile(r"[\w.-]+__[\w.-]+__[\w.-]+__bs\d+__[\w.-]+\.json")


def is_suite_result_file(path: Path, results_dir: Path) -> bool:
    """A file where this suite writes results, by name and place: <cell key>.json in a machine's folder,
    <profile>/<machine>/ (a stack's stack-<name>/ below it), not a link. Anything else in a folder named as results
    (a schema, an env's package data) is not the suite's to move."""
    relative = path.relative_to(results_dir)
    depth = 4 if relative.parent.name.startswith("stack-") else 3
    return bool(RESULT_NAME.fullmatch(path.name)) and len(relative.parts) >= depth and not path.is_symlink()


def placement_problems(loaded: list[tuple[Path, Result]], results_dir: Path) -> list[str]:
    """A readable file where its cell's result does not belong (another name, another profile's or machine's folder),
    and two files of one cell: `make export` would write both rows and the table would pick one."""
    problems, seen = [], {}
    for path, result in loaded:
        expected = result.relative_path()
        relative = path.relative_to(results_dir)
        if relative.parts[-len(expected.parts) :] != expected.parts:
            prefix = relative.parts[: -len(expected.parts)] if len(relative.parts) > len(expected.parts) else ()
            problems.append(
                f"{path}: misplaced: its cell's result belongs at {results_dir.joinpath(*prefix) / expected}; move it there, or out of {results_dir}"
            )
        key = (result.cell.key, getattr(result.cell, "stack", "today"), result.cell.profile, str(expected.parent))
        if key in seen:
            problems.append(
                f"{path}: a second result of the cell of {seen[key]}: keep one (move the other out of {results_dir})"
            )
        seen.setdefault(key, path)
    return problems
