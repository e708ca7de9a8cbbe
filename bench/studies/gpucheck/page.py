"""`make gpu-check`'s report (bench/studies/gpucheck/run.py): GPU-CHECK.md and gpu-check.json, rewritten as each check
ends, so a run cut off (by its budget, a signal, a lost session) leaves every finished check on disk, and `--resume`
reads it back and goes on into the same report. Each session (a start, its budget, how it ended) is listed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bench.base.atomic import write_text_atomic
from bench.base.errors import BenchError
from bench.base.provenance import machine_label

CHECK_TIMED_STEPS = 5  # the paper profile times more; each short cell's result records its own counts
CHECK_WARMUP_STEPS = 2


def sync_name(verdict: dict) -> str:
    return f"sync probe ({verdict['framework']})"


@dataclass
class Report:
    machine: dict
    env: str
    started: str
    budget_s: float
    sync: list[dict] = field(default_factory=list)
    cells: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what the budget (or a stop) left out, named
    environment: dict | None = None
    elapsed_s: float = 0.0
    # one per invocation: {"started", "budget_s", "elapsed_s", "ended": running | finished | budget | signal}
    sessions: list[dict] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Report:
        """The report a cut-off run left; one that cannot be read (cut off mid-write by an older suite, edited) is a
        one-line error naming it and the fix, not a traceback."""
        try:
            data = json.loads(path.read_text())
            return cls._from(data)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise BenchError(
                f"gpu-check: cannot resume from {path} ({type(e).__name__}: {e}): "
                "move it aside and run without RESUME=1"
            ) from None

    @classmethod
    def _from(cls, data: dict) -> Report:
        return cls(
            machine=data["machine"],
            env=data["env"],
            started=data["started"],
            budget_s=data["budget_s"],
            sync=data["sync"],
            cells=data["cells"],
            skipped=data.get("skipped", []),
            environment=data.get("environment"),
            elapsed_s=data.get("elapsed_s", 0.0),
            sessions=data.get("sessions", []),
        )

    def done(self) -> set[str]:
        """The checks with a result: sync probes by their name, short cells by their key."""
        return {sync_name(s) for s in self.sync} | {c["cell"] for c in self.cells}

    def passed(self) -> set[str]:
        """The checks that passed: a sync probe that held, a short cell that ran ok (or is NA here, as it stays); a
        failed one is run again by a resumed check."""
        return {sync_name(s) for s in self.sync if s.get("ok")} | {
            c["cell"] for c in self.cells if c.get("status") in ("ok", "unsupported")}

    def record(self, name: str, found: dict) -> None:
        """One check's result, in place of an earlier result of the same check (a failed one run again)."""
        if name.startswith("sync probe ("):
            self.sync = [s for s in self.sync if sync_name(s) != name] + [found]
        else:
            self.cells = [c for c in self.cells if c["cell"] != name] + [found]

    @property
    def complete(self) -> bool:
        return bool(self.sessions) and self.sessions[-1].get("ended") == "finished"

    def to_dict(self) -> dict:
        return {
            "kind": "gpu-check",
            "machine": self.machine,
            "env": self.env,
            "environment": self.environment,
            "started": self.started,
            "budget_s": self.budget_s,
            "elapsed_s": round(self.elapsed_s, 1),
            "complete": self.complete,
            "sessions": self.sessions,
            "sync": self.sync,
            "cells": self.cells,
            "skipped": self.skipped,
        }

    def markdown(self) -> str:
        env = (
            "unlocked (--env current): " + (self.environment or {}).get("interpreter", "?")
            if self.env == "current"
            else "the locked envs"
        )
        state = (
            "Complete"
            if self.complete
            else "PARTIAL: cut off before every check ran; `make gpu-check RESUME=1` goes on into this report"
        )
        sessions = "; ".join(
            f"{s['started']}: {s.get('elapsed_s', 0):.0f} s of {s['budget_s']:.0f} s, {s['ended']}"
            for s in self.sessions
        )
        lines = [
            f"# GPU check — {machine_label(self.machine)}",
            "",
            f"Run {self.started} in {env}; {self.elapsed_s:.0f} s in all. {state}. "
            "Every figure is this GPU's, none tuned.",
            "",
            f"Sessions: {sessions or 'none'}.",
            "",
            "## 1. Device sync against an external clock",
            "",
        ]
        for s in self.sync:
            verdict = "ok" if s["ok"] else "FAILED: " + "; ".join(s["problems"])
            figures = (
                f" (op {s['op_ms']:.1f} ms by {s['clock']}; window with earlier work {s['window_before_ms']:.2f} ms, "
                    f"with the op inside {s['window_inside_ms']:.1f} ms)"
                if "op_ms" in s
                else ""
            )
            lines.append(f"- {s['framework']}: {verdict}{figures}")
        lines += [
            "",
            "## 2-4. Short paper-shape cells: CUDA graphs, peak device memory against the plan",
            "",
            f"Each with {CHECK_TIMED_STEPS} timed steps after {CHECK_WARMUP_STEPS} warm-up steps, "
            "fewer than the paper profile's: "
            "a check that the cell runs and what it holds, not a published figure.",
            "",
            "| cell | status | median | timed steps (paper's) | CUDA graphs | peak device memory | plan |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in self.cells:
            median = f"{c['median']} {c['unit']}" if c["median"] is not None else (c["message"] or "—")
            graphs = c.get("cudagraphs", {}).get("verdict", "—")
            measured = c["memory"]["measured"]
            peak = (
                f"{measured.get('peak_allocated_gib')} GiB allocated ({measured.get('source')})"
                if isinstance(measured, dict)
                else measured
            )
            plan = f"{c['memory']['plan_gib']:.2f} GiB" if c["memory"]["plan_gib"] else "no plan figure"
            if "verdict" in c["memory"]:
                plan += f" (x{c['memory']['ratio']}: {c['memory']['verdict']})"
            lines.append(
                f"| `{c['cell']}` | {c['status']} | {median} | {c['timed_steps']} ({c['paper_timed_steps']}) "
                f"| {graphs} | {peak} | {plan} |"
            )
        if self.skipped:
            lines += [
                "",
                "Not run yet (left by the budget or a stop; RESUME=1 runs them): "
                + ", ".join(f"`{s}`" for s in self.skipped)
                + ".",
            ]
        return "\n".join(lines) + "\n"

    def write(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        md, js = folder / "GPU-CHECK.md", folder / "gpu-check.json"
        write_text_atomic(js, json.dumps(self.to_dict(), indent=2) + "\n")
        write_text_atomic(md, self.markdown())
        return [md, js]
