"""A fake backend environment for orchestrator tests: its `python` plays a cell with a chosen behaviour.

FAKE_MODE_<BACKEND> picks the behaviour (ok, leaves-child, sleep, sigkill, segv, oomkill, ramkill, oom,
crash); FAKE_SCALE_<BACKEND>, FAKE_JITTER and a file fake-scale in the checkout make processes' figures differ, FAKE_DISTURB_<BACKEND> some disturbed; FAKE_PID_FILE, if set, gets
each cell's pid when it starts; FAKE_ORDER_FILE, if set, gets one "<backend> <task>" line per cell process.
"""

import hashlib
import json
import os
import stat
import subprocess
import sys
import venv
from pathlib import Path

from bench.base.provenance import ENV_STAMP

REPO = Path(__file__).resolve().parent.parent

FAKE_PYTHON = '''#!{python}
# Stands in for `<env>/bin/python -m bench cell --cell JSON --out FILE`.
import json, os, signal, sys, time
args = sys.argv[1:]
cell = json.loads(args[args.index("--cell") + 1])
out = args[args.index("--out") + 1]
mode = os.environ.get("FAKE_MODE_" + cell["backend"].replace("-", "_").upper(), "ok")
venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
if os.environ.get("FAKE_ORDER_FILE"):
    with open(os.environ["FAKE_ORDER_FILE"], "a") as f:
        f.write(cell["backend"] + " " + cell["task"] + "\\n")
if os.environ.get("FAKE_PID_FILE"):
    with open(os.environ["FAKE_PID_FILE"] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.environ["FAKE_PID_FILE"] + ".tmp", os.environ["FAKE_PID_FILE"])
print("[cell] fake cell", cell["backend"], cell["model"], cell["task"], mode, flush=True)
if mode == "leaves-child":  # a compile worker or data loader that outlives the cell, in its process group
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.environ["FAKE_PID_FILE"], "w") as f:
        f.write(str(child.pid))
    mode = "ok"
for cache in ("JAX_COMPILATION_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):  # what a compile leaves for the next process
    if os.environ.get(cache):
        os.makedirs(os.environ[cache], exist_ok=True)
        open(os.path.join(os.environ[cache], "compiled-%d" % os.getpid()), "w").write("x")
if mode == "ok":
    n = cell["timed_steps"]
    # FAKE_SCALE_<BACKEND>: this backend's steps take that many times as long; FAKE_JITTER: the k-th process of a cell
    # moves its steps together by exp(FAKE_JITTER x SPREAD[k]) (processes that differ, as real ones do, the same way
    # in every run)
    import math
    SPREAD = [0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.3, -0.3, 0.0]
    counter = os.path.join(venv, "fake-process-count-" + cell["backend"] + "-" + cell["model"] + "-" + cell["task"])
    k = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, "w").write(str(k + 1))
    scale = float(os.environ.get("FAKE_SCALE_" + cell["backend"].replace("-", "_").upper(), "1"))
    scale *= math.exp(float(os.environ.get("FAKE_JITTER", "0")) * SPREAD[k % len(SPREAD)])
    if os.path.exists("fake-scale"):  # in the checkout the cell runs from: a commit whose code is that much slower
        scale *= float(open("fake-scale").read())
    # FAKE_DISTURB_<BACKEND>=1,3: those processes of a cell (counting from 0) take half again as long in the second
    # half of their steps (a disturbed machine: their noise gate trips)
    disturbed = [int(v) for v in os.environ.get("FAKE_DISTURB_" + cell["backend"].replace("-", "_").upper(), "").split(",") if v]
    run = {{"status": "ok", "first_step_ms": 500.0, "warmup_ms": [12.0] * cell["warmup_steps"],
           "timed_ms": [(10.0 + i % 3) * scale * (1.5 if i >= n // 2 and k in disturbed else 1) for i in range(n)],
           "setup_s": 0.1, "wall_s": 0.2,
           "settings": {{}}, "framework": {{"framework": "fake"}},
           "process": {{"environment": json.load(open(os.path.join(venv, {stamp!r}))),
                       "variables": {{k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "OMP_", "MKL_", "BENCH_CPU", "TORCHINDUCTOR_", "TF_NUM_", "XLA_"))}},
                       "cpu_affinity": sorted(os.sched_getaffinity(0)),
                       "config": json.loads(args[args.index("--config") + 1]) if "--config" in args else None}}}}
    with open(out, "w") as f:
        json.dump(run, f)
elif mode == "sleep":
    time.sleep(120)
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
elif mode == "oomkill":  # what the kernel's OOM killer does: count the kill in memory.events, then SIGKILL
    events = os.environ["BENCH_MEMORY_EVENTS"]
    counts = dict(line.split() for line in open(events).read().splitlines())
    counts["oom_kill"] = str(int(counts["oom_kill"]) + 1)
    open(events, "w").write("".join(k + " " + v + "\\n" for k, v in counts.items()))
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "ramkill":  # a machine's own killer, which counts nothing we can read: SIGKILL while holding RAM
    held = bytearray(300 * 2**20)  # zero-filled, so resident
    time.sleep(2.5)  # long enough for the runner's once-a-second sample
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "oom":
    print("2026-01-01 RESOURCE_EXHAUSTED: Out of memory while trying to allocate 40.00GiB", flush=True)
    sys.exit(1)
elif mode == "crash":
    print("Segmentation fault (core dumped)", flush=True)
    sys.exit(139)
'''


def make_fake_envs(root: Path, backends) -> Path:
    for backend in backends:
        venv = root / backend
        (venv / "bin").mkdir(parents=True)
        python = venv / "bin" / "python"
        python.write_text(FAKE_PYTHON.format(python=sys.executable, stamp=ENV_STAMP))
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
        (venv / ENV_STAMP).write_text(json.dumps({"backend": backend, "lock_sha256": lock_sha256(backend)}))
    return root


QUIET_PROBE = '''"""Every Python started with this folder on PYTHONPATH reads the drift probe (bench/measure/drift.py) as a quiet 1 ms."""
import importlib.abc
import importlib.util
import sys


class QuietProbe(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "bench.measure.drift":
            return None
        sys.meta_path.remove(self)  # the module as it would load without this finder
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.reference_ms = lambda budget_s=None: 1.0
            module.reading = lambda block_s=None: module.Reading(1.0, 1.0, 2, True)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, QuietProbe())
'''


def quiet_probe_path(root: Path) -> str:
    """A PYTHONPATH under which every bench process, however deep it is started, reads the drift probe as quiet: a
    loaded test machine's disturbed-process gate is not what a test of the processes' own figures tests."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "sitecustomize.py").write_text(QUIET_PROBE)
    return os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)


def lock_sha256(backend: str) -> str:
    """What scripts/envs.py stamps an env with: the sha256 of the requirements file it was built from."""
    return hashlib.sha256((REPO / "envs" / backend / "requirements.txt").read_bytes()).hexdigest()


def write_memory_events(path: Path, oom_kill: int) -> Path:
    """A stand-in for the cgroup v2 memory.events file (BENCH_MEMORY_EVENTS points the orchestrator at it)."""
    path.write_text(f"low 0\nhigh 0\nmax 0\noom 0\noom_kill {oom_kill}\noom_group_kill 0\n")
    return path


def run_bench(args, env, timeout=120):
    """`python -m bench ARGS` from the repository, as a user runs it."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def smoke_run(*extra: str, results: Path | None = None) -> list[str]:
    """`run --profile smoke [--results-dir RESULTS] EXTRA...`: the orchestrator's arguments in the tests (python -m
    bench's, or bench.cli.main's)."""
    return ["run", "--profile", "smoke", *(["--results-dir", str(results)] if results is not None else []), *extra]


def bench_env(venvs: Path, **modes) -> dict:
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs)}
    env.update({f"FAKE_MODE_{k.upper()}": v for k, v in modes.items()})
    return env


FAKE_NVIDIA_SMI = r'''#!{python}
# Stands in for nvidia-smi: the GPUs of FAKE_GPUS (a JSON list of dicts keyed by nvidia-smi's query fields),
# answering --query-gpu=FIELDS --format=csv,noheader[,nounits] [--id=IDS] [--loop-ms=N: again every N ms until ended], -L,
# and the plain banner.
import json, os, sys, time
gpus = json.loads(os.environ.get("FAKE_GPUS", "[]"))
args = sys.argv[1:]
query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
ids = next((a.split("=", 1)[1].split(",") for a in args if a.startswith("--id=")), None)
loop_ms = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--loop-ms=")), None)
while query:
    fields = query.split(",")
    for g in gpus:
        if ids and g["index"] not in ids and g["uuid"] not in ids:
            continue
        if any(f not in g for f in fields):
            sys.exit("Field '" + next(f for f in fields if f not in g) + "' is not a valid field to query.")
        print(", ".join(str(g[f]) for f in fields), flush=True)
    if loop_ms is None:
        break
    time.sleep(loop_ms / 1000)
if query:
    pass
elif "-L" in args:
    for g in gpus:
        print("GPU %s: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"]))
        for mig in g.get("migs", []):
            print("  MIG 1g.5gb     Device  0: (UUID: %s)" % mig)
else:
    print("| NVIDIA-SMI %s   Driver Version: %s   CUDA Version: 12.4 |" % (gpus[0]["driver_version"], gpus[0]["driver_version"]) if gpus else "No devices were found")
'''


def a100(index: int, **extra) -> dict:
    """One A100 40GB as nvidia-smi would describe it (every field bench.base.provenance queries)."""
    return {
        "index": str(index),
        "uuid": f"GPU-a100000{index}-0000-0000-0000-00000000000{index}",
        "name": "NVIDIA A100-SXM4-40GB",
        "driver_version": "550.54.15",
        "memory.total": "40960",
        "pci.bus_id": f"00000000:0{index}:00.0",
        "compute_cap": "8.0",
        "clocks.sm": "1410",
        "clocks.max.sm": "1410",
        "clocks.mem": "1215",
        "clocks.max.mem": "1215",
        "power.draw": "61.2",
        "power.limit": "400.00",
        "temperature.gpu": "31",
        "clocks_throttle_reasons.active": "0x0000000000000000",
        **extra,
    }


def install_fake_nvidia_smi(bin_dir: Path, gpus: list[dict], monkeypatch=None) -> dict:
    """Put a fake nvidia-smi first on PATH describing `gpus`; returns the variables (applied with monkeypatch)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_NVIDIA_SMI.format(python=sys.executable))
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_GPUS": json.dumps(gpus)}
    if monkeypatch is not None:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
    return env


def site_packages(python: Path) -> Path:
    """That interpreter's purelib folder."""
    return Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )


def make_interpreter(root: Path, distributions: dict[str, str]) -> Path:
    """A throwaway venv that lists `distributions` (importlib.metadata) with no code behind them: a machine's own
    Python as the suite asks it what it has."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    python = root / "bin" / "python"
    site = site_packages(python)
    for name, version in distributions.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return python


def write_noise_study(results_dir: Path, machine: dict, profile: str, log_sd: float = 0.02, dof: float = 30) -> Path:
    """A machine's noise study as `make noise PROFILE=<profile>` leaves it, reduced to what a one-process cell of that
    profile borrows: its process-to-process spread."""
    from bench.judge.noise_file import NOISE_DIR, NOISE_FORMAT, noise_file_name

    path = Path(results_dir) / NOISE_DIR / noise_file_name(machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": NOISE_FORMAT, "settings": {"profile": profile},
                                "process_spread": {"log_sd": log_sd, "dof": dof}}))  # fmt: skip
    return path
