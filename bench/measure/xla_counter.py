"""The formulas against XLA's own count: `python -m bench flops-xla <profile> [model...]`, run in the
jax env (Keras 3 on JAX), a second counter beside torch's (bench/measure/torch_counter.py).

Each model's check is its `bench/models/<name>/work_jax.py`: `checks(shape) -> [(label, function, arguments,
formula_flops)]`, a pure function of the Keras model's variables and inputs (`stateless_call`) that jax.jit lowers and
XLA compiles; `compiled.cost_analysis()["flops"]` is XLA's count of the compiled step. XLA counts every floating-point
operation, elementwise ones too (normalisation, softmax, activations, the loss), which the model-FLOP formulas leave
out, so its count is the larger by those: the ratio says how much of the step is outside the matrix products.
Beside it, `traced` counts the model FLOPs of the same function from its traced program (jax.make_jaxpr): the matrix
products and convolutions alone, 2 per multiply-add, as torch's counter and the formulas count them, so a Keras
model's own work is set against the formula and against its native twin's (tests/test_same_work.py).
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


def traced_flops(function, arguments) -> float:
    """The model FLOPs of a JAX function from its traced program: every dot_general and conv_general_dilated, in
    nested programs too (jit, custom derivatives, remat; a scan's body as often as it runs)."""
    import jax

    return program_flops(jax.make_jaxpr(function)(*arguments).jaxpr)


def program_flops(jaxpr) -> float:
    import math

    total = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (_, rhs_contract), (_, rhs_batch) = eqn.params["dimension_numbers"]
            lhs, rhs = (v.aval.shape for v in eqn.invars[:2])
            rhs_free = [d for i, d in enumerate(rhs) if i not in rhs_contract and i not in rhs_batch]
            total += 2.0 * math.prod(lhs) * math.prod(rhs_free)
        elif name == "conv_general_dilated":
            rhs, out = eqn.invars[1].aval.shape, eqn.outvars[0].aval.shape
            per_output = math.prod(rhs) / rhs[eqn.params["dimension_numbers"].rhs_spec[0]]  # taps x in-features
            # a strided convolution's input gradient dilates its input with zeros: those products are not work
            total += 2.0 * math.prod(out) * per_output / math.prod(eqn.params["lhs_dilation"])
        elif name == "while":
            raise ValueError("a while loop's trip count is not in its program: its FLOPs cannot be counted")
        if name == "cond":  # one branch runs: the costliest counted
            total += max(program_flops(branch.jaxpr) for branch in eqn.params["branches"])
            continue
        repeats = eqn.params.get("length", 1) if name == "scan" else 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                inner = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's program, or a Jaxpr itself
                if hasattr(inner, "eqns"):
                    total += repeats * program_flops(inner)
    return total


def run(profile: str, models: list[str], layers: int | None = None) -> list[dict]:
    """Every model's checks at the profile's shape; `layers` cuts a deep model to that many layers (a 7B model's
    full widths then fit this machine's memory, and the formula is checked at the same cut shape)."""
    import dataclasses

    from bench.catalogue.registry import MODELS, get_model

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
                traced = traced_flops(function, arguments)
                counted = xla_flops(function, arguments)
            except Exception as e:  # said, not hidden
                out.append(
                    {"model": model, "check": label, "formula": formula, "error": f"{type(e).__name__}: {e}"[:300]}
                )
                continue
            out.append({"model": model, "check": label, "formula": formula, "xla": counted, "ratio": formula / counted,
                        "traced": traced, "traced_ratio": formula / traced if traced else None})
    return out


def main(argv: list[str]) -> int:
    import os

    os.environ["KERAS_BACKEND"] = "jax"  # before Keras is imported: the checks are Keras 3 on JAX
    from bench.base.provenance import gpus

    if not gpus():  # else the CUDA plugin's failed cuInit prints a traceback on a machine without a GPU
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench flops-xla", description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="smoke")
    parser.add_argument("models", nargs="*")
    parser.add_argument("--layers", type=int, help="cut each model to this many layers (a 7B model at its full widths)")
    args = parser.parse_args(argv)
    profile = args.profile
    rows = run(profile, args.models, args.layers)
    for r in rows:
        got = (f"XLA {r['xla']:.4e}  formula/XLA {r['ratio']:.4f}  traced {r['traced']:.4e}" if "xla" in r
               else f"XLA: {r['error']}")
        print(f"{r['model']:18} {r['check']:36} formula {r['formula']:.4e}  {got}")
    print(PREFIX + json.dumps({"profile": profile, "layers": args.layers, "checks": rows}), flush=True)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
