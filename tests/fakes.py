"""A fake backend environment for orchestrator tests: its `python` plays a cell with a chosen behaviour."""
import json
import os
import stat
import sys
from pathlib import Path

FAKE_PYTHON = '''#!{python}
# Stands in for `<env>/bin/python -m bench cell --cell JSON --out FILE`.
import json, os, signal, sys, time
args = sys.argv[1:]
cell = json.loads(args[args.index("--cell") + 1])
out = args[args.index("--out") + 1]
mode = os.environ.get("FAKE_MODE_" + cell["backend"].replace("-", "_").upper(), "ok")
print("[cell] fake cell", cell["backend"], cell["model"], cell["task"], mode, flush=True)
if mode == "ok":
    n = cell["timed_steps"]
    run = {{"status": "ok", "first_step_ms": 500.0, "warmup_ms": [12.0] * cell["warmup_steps"],
           "timed_ms": [10.0 + i % 3 for i in range(n)], "setup_s": 0.1, "wall_s": 0.2,
           "settings": {{"unit": "ms/step"}}, "framework": {{"framework": "fake"}}, "process": {{}}}}
    with open(out, "w") as f:
        json.dump(run, f)
elif mode == "sleep":
    time.sleep(120)
elif mode == "sigkill":
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
        python.write_text(FAKE_PYTHON.format(python=sys.executable))
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
        (venv / "bench-env.json").write_text(json.dumps({"backend": backend, "lock_sha256": "fake"}))
    return root


def bench_env(venvs: Path, **modes) -> dict:
    env = {**os.environ, "BENCH_VENVS_DIR": str(venvs)}
    env.update({f"FAKE_MODE_{k.upper()}": v for k, v in modes.items()})
    return env
