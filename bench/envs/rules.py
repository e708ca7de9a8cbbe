"""Cross-env rules, checked on the install artifacts (requirements.txt). Stdlib only.

Nothing is listed here: the rules come from the backends' definitions (bench/catalogue/backends.py), where each
backend declares the packages it pins alike with the others (`shared_pins`, and `optional_shared_pins` where it
may not have the package at all) and whether its TensorFlow is
tensorflow-cpu alone (`tensorflow_cpu_only`).
"""
from __future__ import annotations

from collections.abc import Callable

from bench.catalogue.backends import BACKENDS, Backend


def shared_pin_groups() -> dict[str, list[str]]:
    """package -> the backends that pin it alike, in backend order (packages in order of first mention)."""
    groups: dict[str, list[str]] = {}
    for b in BACKENDS.values():
        for pkg in (*b.shared_pins, *b.optional_shared_pins):
            groups.setdefault(pkg, []).append(b.name)
    return {pkg: names for pkg, names in groups.items() if len(names) > 1}


def tensorflow_reference(backend: Backend) -> str | None:
    """The backend whose `tensorflow` a tensorflow-cpu-only backend matches: the TensorFlow one of its Keras major."""
    for b in BACKENDS.values():
        if b.framework == "tensorflow" and b.keras_major == backend.keras_major and not b.tensorflow_cpu_only:
            return b.name
    return None


def _members(names: list[str]) -> str:
    """How a failure names a group: by Keras major when it is every backend of one, else by name."""
    majors = {BACKENDS[n].keras_major for n in names}
    if len(majors) == 1 and None not in majors:
        (major,) = majors
        if names == [n for n, b in BACKENDS.items() if b.keras_major == major]:
            return f"across the Keras {major} envs"
    return f"between {' and '.join(names)}" if len(names) == 2 else f"across {', '.join(names)}"


def check_cross_env(versions: dict[str, dict[str, str]], fail: Callable[[str, str], None],
                    ok: Callable[[str], None]) -> None:
    """versions: env -> {package: version} of the envs checked (others are left out of every rule)."""

    def ver(n: str, pkg: str) -> str | None:
        return versions.get(n, {}).get(pkg)

    for pkg, group in shared_pin_groups().items():
        vs = {
            n: ver(n, pkg)
            for n in group
            if n in versions and not (pkg in BACKENDS[n].optional_shared_pins and ver(n, pkg) is None)
        }
        if vs and set(vs.values()) == {None}:
            continue  # no env of the group has it (keras-hub on the 2024 stack, keras-nlp on today's)
        if len(set(vs.values())) > 1 or None in vs.values():
            fail("cross-env", f"{pkg} differs {_members(group)}: {vs}")
        elif vs:
            ok(f"cross-env: {pkg}=={next(iter(vs.values()))} in {', '.join(vs)}")

    for b in BACKENDS.values():
        n = b.name
        if not b.tensorflow_cpu_only or n not in versions:
            continue
        ref = tensorflow_reference(b)
        tf_ref = ver(ref, "tensorflow") if ref else None
        if ver(n, "tensorflow"):
            fail(n, f"has `tensorflow=={ver(n, 'tensorflow')}` (GPU build): must be tensorflow-cpu only")
        elif not ver(n, "tensorflow-cpu"):
            fail(n, "tensorflow-cpu missing")
        elif tf_ref and ver(n, "tensorflow-cpu") != tf_ref:
            fail(n, f"tensorflow-cpu=={ver(n, 'tensorflow-cpu')} differs from the {ref} env's tensorflow=={tf_ref}")
        else:
            ok(f"cross-env: {n} has tensorflow-cpu=={ver(n, 'tensorflow-cpu')} and no tensorflow")
