"""Out-of-memory and signal classification, against the frameworks' real messages."""
import signal
import subprocess
import sys

import pytest

from bench.base.failures import PeakMemory, classify, crash_status, has_oom_marker, oom_kill_count

# Real texts: the CPU ones raised by this project's envs (torch 2.10, JAX 0.10, TensorFlow 2.21, NumPy 2) on
# allocations too large for the machine; the GPU ones as the frameworks' allocators word them.
REAL_OOM_ERRORS = {
    "tensorflow": (
        "ResourceExhaustedError",
        "{{function_node __wrapped__Fill_device_/job:localhost/replica:0/task:0/device:CPU:0}} OOM when allocating tensor with shape[17592186044416] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu [Op:Fill] name: ",
    ),
    "tensorflow-gpu": (
        "ResourceExhaustedError",
        "{{function_node __wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:GPU:0}} OOM when allocating tensor with shape[65536,65536] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:MatMul] name: ",
    ),
    "xla-gpu": ("XlaRuntimeError", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes."),
    "jax": ("JaxRuntimeError", "RESOURCE_EXHAUSTED: Out of memory allocating 70368744177664 bytes."),
    "torch-cuda": (
        "OutOfMemoryError",
        "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 2.67 GiB is free. Including non-PyTorch memory, this process has 76.50 GiB memory in use. Of the allocated memory 75.90 GiB is allocated by PyTorch, and 12.00 MiB is reserved by PyTorch but unallocated.",
    ),
    "torch-cpu": (
        "RuntimeError",
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 281474976710656 bytes. Error code 12 (Cannot allocate memory)",
    ),
    "numpy": (
        "MemoryError",
        "Unable to allocate 512. TiB for an array with shape (70368744177664,) and data type float64",
    ),
}
NOT_OOM = [
    ("ValueError", "Input 0 of layer 'dense' is incompatible with the layer: expected axis -1 to have value 768"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
    (
        "XlaRuntimeError",
        "INTERNAL: Failed to execute XLA Runtime executable: run time error: custom call 'xla.gpu.all_reduce' failed.",
    ),
]


def exception(type_name: str, message: str) -> Exception:
    base = MemoryError if type_name == "MemoryError" else Exception
    return type(type_name, (base,), {})(message)


@pytest.mark.parametrize("source", REAL_OOM_ERRORS)
def test_every_frameworks_oom_is_classified_oom(source):
    type_name, message = REAL_OOM_ERRORS[source]
    assert classify(exception(type_name, message)) == "oom"
    assert has_oom_marker(
        f"some.module.{type_name}: {message}"
    )  # the traceback's last line, as the orchestrator reads it


def test_a_bare_python_memory_error_is_oom():
    assert classify(MemoryError()) == "oom"
    assert has_oom_marker("Traceback (most recent call last):\n  ...\nMemoryError")


@pytest.mark.parametrize("type_name,message", NOT_OOM)
def test_other_errors_are_errors(type_name, message):
    assert classify(exception(type_name, message)) == "error"
    assert not has_oom_marker(f"{type_name}: {message}")


def test_oom_kill_count_reads_cgroup_v2_memory_events(tmp_path):
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n")
    assert oom_kill_count(events) == 2
    assert oom_kill_count(tmp_path / "absent") is None  # cgroup v1 or no /sys: cannot tell


@pytest.mark.parametrize(
    "code,output,before,after,expected",
    [
        (
            -signal.SIGKILL,
            "step 3",
            0,
            1,
            ("oom", "killed by SIGKILL: the kernel's OOM killer (memory.events oom_kill 0 -> 1)"),
        ),
        (
            -signal.SIGKILL,
            "step 3",
            1,
            1,
            ("killed", "killed by SIGKILL (no sign of the OOM killer: memory.events oom_kill unchanged)"),
        ),
        (
            -signal.SIGKILL,
            "step 3",
            None,
            None,
            ("killed", "killed by SIGKILL (no sign of the OOM killer: memory.events cannot be read)"),
        ),
        (
            -signal.SIGKILL,
            "CUDA out of memory. Tried to allocate 2.00 GiB",
            None,
            None,
            ("oom", "killed by SIGKILL after reporting an out-of-memory error"),
        ),
        (-signal.SIGTERM, "step 3", 0, 0, ("killed", "killed by SIGTERM")),
        (-signal.SIGSEGV, "step 3", 0, 0, ("killed", "killed by SIGSEGV")),
        (
            1,
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1 bytes.",
            0,
            0,
            ("oom", "exited with status 1 and no result"),
        ),
        (139, "Segmentation fault", 0, 0, ("error", "exited with status 139 and no result")),
    ],
)
def test_a_dead_cell_is_oom_only_with_evidence(code, output, before, after, expected):
    assert crash_status(code, output, before, after) == expected


@pytest.mark.parametrize(
    "code,peak,ram,status",
    [
        (-signal.SIGKILL, 22.0, 23.5, "oom"),  # at the RAM's edge: the machine ran out
        (-signal.SIGKILL, 12.0, 23.5, "killed"),  # room to spare: someone else's SIGKILL
        (-signal.SIGKILL, None, 23.5, "killed"),  # never sampled
        (-signal.SIGKILL, 22.0, None, "killed"),  # RAM unknown
        (-signal.SIGTERM, 23.0, 23.5, "killed"),  # the OOM killer sends SIGKILL only
    ],
)
def test_a_sigkill_at_the_rams_edge_is_oom(code, peak, ram, status):
    got, message = crash_status(code, "step 3", None, None, peak, ram)
    assert got == status, message
    if status == "oom":
        assert (
            message
            == "killed by SIGKILL while its processes held 22.0 GiB of the machine's 23.5 GiB of RAM (sampled each second): out of host memory"
        )


def test_peak_memory_sees_a_process_group_hold_ram():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; held = bytearray(200 * 2**20); time.sleep(3)"], start_new_session=True
    )
    with PeakMemory(child.pid, interval_s=0.2) as memory:
        child.wait()
    assert 0.19 < memory.peak_gib < 0.5, memory.peak_gib
