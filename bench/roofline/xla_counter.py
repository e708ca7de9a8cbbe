"""The formulas against XLA's own count: `python -m bench.roofline.xla_counter <profile> [model...]`, run in the
jax env (Keras 3 on JAX), a second counter beside torch's (bench/roofline/counter.py).

Each model's check is its `bench/models/<name>/work_jax.py`: `checks(shape) -> [(label, function, arguments,
formula_flops)]`, a pure function of the Keras model's variables and inputs (`stateless_call`) that jax.jit lowers and
XLA compiles; `compiled.cost_analysis()["flops"]` is XLA's count of the compiled step. XLA counts every floating-point
operation, elementwise ones too (normalisation, softmax, activations, the loss), which the model-FLOP formulas leave
out, so its count is the larger by those: the ratio says how much of the step is outside the matrix products.
Prints one line per check and a last line `XLACHECK {json}`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys

PREFIX = "XLACHECK "


def xla_flops(function, arguments) -> float:
    import jax

    analysis = jax.jit(function).lower(*arguments).compile().cost_analysis()
    if isinstance(analysis, list):  # older jax: one dict per computation
        analysis = analysis[0]
    return float(analysis["flops"])


def run(profile: str, models: list[str], layers: int | None = None) -> list[dict]:
    """Every model's checks at the profile's shape; `layers` cuts a deep model to that many layers (a 7B model's
    full widths then fit this machine's memory, and the formula is checked at the same cut shape)."""
    import dataclasses

    from bench.registry import MODELS, get_model

    out = []
    for model in models or list(MODELS):
        name = f"bench.models.{model}.work_jax"
        if importlib.util.find_spec(name) is None:
            continue
        shape = get_model(model).shape(profile)
        if layers and hasattr(shape, "num_layers"):
            shape = dataclasses.replace(shape, num_layers=layers)
        for label, function, arguments, formula in importlib.import_module(name).checks(shape):
            try:
                counted = xla_flops(function, arguments)
            except Exception as e:  # said, not hidden
                out.append(
                    {"model": model, "check": label, "formula": formula, "error": f"{type(e).__name__}: {e}"[:300]}
                )
                continue
            out.append({"model": model, "check": label, "formula": formula, "xla": counted, "ratio": formula / counted})
    return out


def main(argv: list[str]) -> int:
    import os

    os.environ["KERAS_BACKEND"] = "jax"  # before Keras is imported: the checks are Keras 3 on JAX
    from bench.provenance import gpus

    if not gpus():  # else the CUDA plugin's failed cuInit prints a traceback on a machine without a GPU
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.roofline.xla_counter", description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="smoke")
    parser.add_argument("models", nargs="*")
    parser.add_argument("--layers", type=int, help="cut each model to this many layers (a 7B model at its full widths)")
    args = parser.parse_args(argv)
    profile = args.profile
    rows = run(profile, args.models, args.layers)
    for r in rows:
        got = f"XLA {r['xla']:.4e}  formula/XLA {r['ratio']:.4f}" if "xla" in r else f"XLA: {r['error']}"
        print(f"{r['model']:18} {r['check']:36} formula {r['formula']:.4e}  {got}")
    print(PREFIX + json.dumps({"profile": profile, "layers": args.layers, "checks": rows}), flush=True)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
