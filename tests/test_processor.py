"""Which processor a number came from: its identity in every result and in the ceilings file, and a ceilings file
of another processor never used silently."""
import json
from pathlib import Path

import pytest

from bench.base import provenance
from bench.base.provenance import machine_info, machine_label, machine_slug, processor_fields, processor_info
from bench.run import ceilings

IDENTITY = {"vendor", "family", "model", "stepping", "model_name", "flags", "fingerprint"}

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
microcode\t: 0x2b000461
cpu MHz\t\t: 2000.000
cache size\t: 107520 KB
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_bf16 avx512_fp16 \
amx_tile amx_bf16 amx_int8 hypervisor

processor\t: 1
vendor_id\t: GenuineIntel
cpu MHz\t\t: 3800.000
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp \
sve i8mm bf16
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1
"""


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux only: elsewhere the platform module's name")
def test_this_machines_processor_has_its_fields_and_a_stable_fingerprint():
    info = processor_info()
    assert IDENTITY | {"microcode", "mhz", "cache_size"} <= set(info)
    assert info["vendor"] and info["family"] and info["model"] and info["model_name"]
    assert len(info["fingerprint"]) == 64 and processor_info()["fingerprint"] == info["fingerprint"]
    assert set(info["flags"]) <= set(provenance.VECTOR_EXTENSIONS)
    cpuinfo = Path("/proc/cpuinfo").read_text()
    if " avx2 " in cpuinfo:
        assert "avx2" in info["flags"]


def test_the_fingerprint_is_the_identity_not_the_clock():
    intel = processor_fields(X86)
    assert intel == {
        "vendor": "GenuineIntel",
        "family": "6",
        "model": "143",
        "stepping": "8",
        "model_name": "Intel(R) Xeon(R) Platinum 8480+",
        "microcode": "0x2b000461",
        "flags": ["sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16",
                  "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"],
        "mhz": 2000.0,  # the first processor's: the second's 3800 is not read
        "cache_size": "107520 KB",
    }
    fingerprint = provenance.processor_fingerprint_of
    assert fingerprint(intel) == fingerprint({**intel, "mhz": 3800.0, "microcode": "0x2c000000"})
    assert fingerprint(intel) != fingerprint({**intel, "stepping": "7"})
    assert fingerprint(intel) != fingerprint({**intel, "flags": intel["flags"][:-3]})  # no AMX: other kernels


def test_an_arm_processor_is_named_by_its_implementer_part_and_features():
    arm = processor_fields(ARM)
    assert (arm["vendor"], arm["family"], arm["model"], arm["stepping"]) == ("0x41", "8", "0xd40", "0x1r1")
    assert arm["flags"] == ["aes", "asimd", "asimdhp", "asimddp", "fphp", "i8mm", "bf16", "sve"]


def test_every_result_names_its_processor_and_two_processors_of_one_name_never_share_a_folder_or_a_table():
    machine = machine_info()
    assert machine["processor"]["fingerprint"] == processor_info()["fingerprint"]
    tag = machine["processor"]["fingerprint"][:12]
    other = {**machine, "processor": {**machine["processor"], "model": "1", "fingerprint": "e" * 64}}
    assert machine_slug(machine).endswith(f"--{tag}") and tag in machine_label(machine)
    assert machine_slug(other) != machine_slug(machine) and machine_label(other) != machine_label(machine)
    without = {k: v for k, v in machine.items() if k != "processor"}  # a result from before processors were recorded
    assert machine_slug(without) == machine_slug(machine).removesuffix(f"--{tag}")
    gpu = {**machine, "gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}  # named by what its cells measure: its GPUs
    assert machine_slug(gpu) == "1x-nvidia-h100-80gb-hbm3" and machine_label(gpu) == "1x NVIDIA H100 80GB HBM3"


def test_two_processors_of_one_name_write_their_results_side_by_side(tmp_path):
    from bench.catalogue.registry import Cell
    from bench.record.results import result_path

    cell = Cell("jax", "bert", "fit", 2, "smoke", "default", 1, 3)
    here = machine_info()
    other = {**here, "processor": {**here["processor"], "model": "1", "fingerprint": "e" * 64}}
    mine, theirs = result_path(tmp_path, cell, here), result_path(tmp_path, cell, other)
    assert mine.name == theirs.name and mine.parent != theirs.parent and mine.parent.parent == theirs.parent.parent


def test_a_ceilings_file_from_before_folders_named_the_processor_is_still_found(ceilings_file):
    results_dir = ceilings_file.parent.parent
    here = machine_info()
    legacy = ceilings_file.with_name(ceilings.hardware_slug(here) + ".json")
    ceilings_file.rename(legacy)
    assert ceilings.load_machine_file(results_dir, here)["ceilings"] == PROBE


PROBE = {"host": {"matmul": {"float32": {"median": 1e11}}, "triad": {"median": 1e10}}}


@pytest.fixture
def ceilings_file(tmp_path, monkeypatch):
    """`make ceilings` on this machine (the probes stubbed)."""
    monkeypatch.setattr(ceilings, "measure_run", lambda *a, **kw: PROBE)
    return ceilings.measure_machine(tmp_path, tmp_path / "no-venvs", echo=lambda line: None, repeats=1)


def test_the_ceilings_file_records_the_processor(ceilings_file):
    data = json.loads(ceilings_file.read_text())
    assert data["machine"]["processor"]["fingerprint"] == processor_info()["fingerprint"]


def test_a_ceilings_file_of_another_processor_is_not_used_and_that_is_said(ceilings_file, capsys):
    results_dir = ceilings_file.parent.parent
    here = machine_info()
    assert ceilings.load_machine_file(results_dir, here)["ceilings"] == PROBE
    assert ceilings.machine_file_for(results_dir, here)[1] is None
    other = {**here, "processor": {**here["processor"], "family": "999", "fingerprint": "f" * 64}}
    assert ceilings.load_machine_file(results_dir, other) is None  # its own file: none
    ceilings_file.rename(ceilings_file.with_name(ceilings.hardware_slug(here) + ".json"))  # a file of the name only
    assert ceilings.load_machine_file(results_dir, other) is None
    said = capsys.readouterr().err
    assert "not used: measured on another processor" in said
    assert f'family: "{here["processor"]["family"]}" vs "999"' in said
    # a result from before the processor was recorded: matched by its label, as it was, and said so
    old = {k: v for k, v in here.items() if k != "processor"}
    data, note = ceilings.machine_file_for(results_dir, old)
    assert data["ceilings"] == PROBE and "label only (the result recorded no processor)" in note
