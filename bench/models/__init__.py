"""One package per model: `__init__.py` holds the framework-neutral spec, `workload.toml` its shapes per
profile, and `keras.py` / `native_torch.py` the per-framework implementations (imported lazily)."""
