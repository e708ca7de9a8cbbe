"""The formulas against PyTorch's own FLOP counter: `python -m bench flops-torch <profile> [model...]`, run in
the native-torch env (`make flops-check`).

Each model's check is its `bench/models/<name>/work_torch.py`: `checks(shape, device) -> [(label, step,
formula_flops)]`, each `step` a closure that runs one step of the native model, and `formula_flops` what
bench/models/<name>/work.py says that same computation costs. `device` "meta" (the default) builds the model on
PyTorch's meta device: shapes without memory, so a full-size 7B model costs nothing; a step whose library reads a
value (`Tensor.item()`) cannot run there, so `--device cpu` runs it for real, at a profile small enough (smoke).
`torch.utils.flop_counter.FlopCounterMode` counts the matrix products, convolutions and attention kernels the step
dispatches (forward and backward), 2 per multiply-add, as the formulas do. Prints one line per check and a last line
`CROSSCHECK {json}`; exit status 1 when a check differs by more than TOLERANCE.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys

TOLERANCE = 0.10  # the bar: a formula within 10% of the framework's own count, or the difference explained
PREFIX = "CROSSCHECK "


def counted_flops(step) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        step()
    return int(mode.get_total_flops())


def run(profile: str, models: list[str], device: str = "meta") -> list[dict]:
    from bench.catalogue.registry import MODELS, get_model

    out = []
    for model in models or list(MODELS):
        name = f"bench.models.{model}.work_torch"
        if importlib.util.find_spec(name) is None:
            continue
        shape = get_model(model).shape(profile)
        for label, step, formula in importlib.import_module(name).checks(shape, device):
            try:
                counted = counted_flops(step)
            except Exception as e:  # a step the meta device cannot run: said, not hidden
                out.append(
                    {
                        "model": model,
                        "check": label,
                        "device": device,
                        "formula": formula,
                        "error": f"{type(e).__name__}: {e}"[:300],
                    }
                )
                continue
            out.append(
                {
                    "model": model,
                    "check": label,
                    "device": device,
                    "formula": formula,
                    "counted": counted,
                    "ratio": formula / counted if counted else None,
                }
            )
    return out


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench flops-torch", description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="paper")
    parser.add_argument("models", nargs="*")
    parser.add_argument("--device", choices=("meta", "cpu"), default="meta")
    args = parser.parse_args(argv)
    profile = args.profile
    rows = run(profile, args.models, args.device)
    worst = 0.0
    for r in rows:
        if "error" in r:
            print(f"{r['model']:18} {r['check']:44} formula {r['formula']:.4e}  counter: {r['error']}")
            continue
        worst = max(worst, abs(r["ratio"] - 1))
        print(
            f"{r['model']:18} {r['check']:44} formula {r['formula']:.4e}  counter {r['counted']:.4e}  "
            f"formula/counter {r['ratio']:.4f}"
        )
    print(
        PREFIX + json.dumps({"profile": profile, "device": args.device, "tolerance": TOLERANCE, "checks": rows}),
        flush=True,
    )
    return 0 if worst <= TOLERANCE and all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
