"""The JAX "sees no GPU" refusal names the CUDA plugin that matches the driver's CUDA (nvidia-smi's CUDA Version)."""

import pytest

from bench.measure import frameworks


@pytest.mark.parametrize(
    "driver_cuda,plugin,other",
    [
        ("13.0", "jax-cuda13-plugin", "cuda12"),
        ("12.4", "jax-cuda12-plugin", "cuda13"),
        (None, "jax-cuda12-plugin", "cuda13"),
    ],
)
def test_jax_without_a_gpu_names_the_plugin_of_the_drivers_cuda(monkeypatch, driver_cuda, plugin, other):
    monkeypatch.setattr(frameworks, "gpu_devices", lambda framework: ([], "jax 0.11.2: CpuDevice(id=0)"))
    with pytest.raises(frameworks.GpuNotVisible) as refused:
        frameworks.require_gpu("jax", [{"name": "NVIDIA H100 80GB HBM3", "driver_cuda": driver_cuda}])
    assert plugin in str(refused.value) and other not in str(refused.value)
