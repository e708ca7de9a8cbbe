"""make test's two lanes (tests/lanes.py): together exactly the selection, each unit whole in one lane, the work
split about evenly by the measured seconds."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from lanes import DURATIONS, measured_seconds, parse_lane, split

LANES = "not wall_clock and not extended"


class Marker:
    def __init__(self, *args):
        self.args = args


class Item:
    def __init__(self, nodeid, *marks, hint=None, fixtures=()):
        self.nodeid = nodeid
        self.fixturenames = list(fixtures)
        self.marks = {name: Marker() for name in marks}
        if hint is not None:
            self.marks["duration_s"] = Marker(hint)

    def get_closest_marker(self, name):
        return self.marks.get(name)

    def __repr__(self):
        return self.nodeid


def loads(lanes, measured):
    return [sum(measured.get(i.nodeid, 1.0) for i in lane) for lane in lanes]


def test_longest_first_to_the_least_loaded_lane_with_the_groups_kept_whole():
    fast = [Item(f"f{k}", "envs") for k in range(4)]
    sd = [Item("sd1", "slow", "keras_cv_sd"), Item("sd2", "slow", "keras_cv_sd"), Item("image", "slow", "container")]
    slow = [Item(f"s{k}", "slow") for k in range(5)]
    items = fast + sd + slow
    measured = {**{f"f{k}": 30.0 for k in range(4)}, "sd1": 400.0, "sd2": 300.0, "image": 200.0,
                "s0": 500.0, "s1": 300.0, "s2": 200.0, "s3": 100.0, "s4": 100.0}  # fmt: skip
    lanes = split(items, 2, measured)
    assert sorted(i.nodeid for lane in lanes for i in lane) == sorted(i.nodeid for i in items)
    for group in (fast, sd):
        assert sum(all(i in lane for i in group) for lane in lanes) == 1, group
    # units: both cores 900, s0 500, s1 300, s2 200, not slow 120, s3 100, s4 100 (2220 in all): LPT gives 1100/1120
    assert sorted(loads(lanes, measured)) == [1100.0, 1120.0]
    assert [i.nodeid for i in lanes[0]] == [i.nodeid for i in items if i in lanes[0]]  # the items' order kept


def test_the_tests_needing_no_env_go_by_file_each_file_whole():
    a = [Item("tests/test_a.py::one"), Item("tests/test_a.py::two")]
    b = [Item("tests/test_b.py::one")]
    envs = [Item("tests/test_c.py::one", "envs"), Item("tests/test_d.py::one", "envs")]
    measured = {"tests/test_a.py::one": 300.0, "tests/test_a.py::two": 200.0, "tests/test_b.py::one": 400.0,
                "tests/test_c.py::one": 50.0, "tests/test_d.py::one": 60.0}  # fmt: skip
    lanes = split(a + b + envs, 2, measured)
    for group in (a, b, envs):
        assert sum(all(i in lane for i in group) for lane in lanes) == 1, group
    # units: test_a 500, test_b 400, the env tests 110: the files in different lanes
    assert sorted(loads(lanes, measured)) == [500.0, 510.0]


def test_the_readers_of_the_shared_smoke_runs_are_one_unit_whatever_their_markers():
    """One lane runs each shared run (tests/shared_run.py) at its first reader; no reader in the other lane waits."""
    readers = [Item("tests/test_a.py::one", "envs", "slow", fixtures=["shared_smoke"]),
               Item("tests/test_b.py::two", "envs", fixtures=["tmp_path", "shared_smoke"]),
               Item("tests/test_c.py::three", fixtures=["shared_smoke"])]  # fmt: skip
    others = [Item("tests/test_d.py::one", "envs", "slow"), Item("tests/test_e.py::one", "envs", "slow")]
    measured = {"tests/test_a.py::one": 300.0, "tests/test_b.py::two": 10.0, "tests/test_c.py::three": 10.0,
                "tests/test_d.py::one": 250.0, "tests/test_e.py::one": 40.0}  # fmt: skip
    lanes = split(readers + others, 2, measured)
    assert sum(all(i in lane for i in readers) for lane in lanes) == 1, lanes  # by marker, two units would split
    assert sorted(loads(lanes, measured)) == [290.0, 320.0]


def test_a_test_without_a_figure_counts_its_duration_hint_else_a_second():
    items = [Item("a", "slow", hint=600), Item("b", "slow"), Item("c", "slow"), Item("d", "slow", hint=300)]
    lanes = split(items, 2, {"c": 200.0})
    assert [[i.nodeid for i in lane] for lane in lanes] == [["a"], ["b", "c", "d"]]


def test_a_lane_option_is_k_of_n():
    assert parse_lane("2/3") == (2, 3)
    for wrong in ("3/2", "0/2", "2", "a/b"):
        with pytest.raises(pytest.UsageError):
            parse_lane(wrong)


def test_the_committed_durations_name_tests_that_exist_and_say_where_they_were_measured():
    document = json.loads(DURATIONS.read_text())
    assert document["measured"] and all(m["host"] and m["started"] for m in document["measured"])
    seconds = measured_seconds()
    assert seconds and all(s >= 0 for s in seconds.values())
    files = {name.split("::")[0] for name in seconds}
    assert all((REPO / f).is_file() for f in files), [f for f in files if not (REPO / f).is_file()]


def collected(*args) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", LANES, *args],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_make_tests_two_lanes_are_its_selection_split_with_the_stable_diffusion_cells_in_one(tmp_path):
    record = tmp_path / "lanes.json"
    one = collected("--lane", "1/2", "--lanes-json", str(record))  # one collection: each is 10-20 s
    split_record = json.loads(record.read_text())
    whole, (lane_one, two) = split_record["selected"], split_record["lanes"]
    assert one == lane_one  # what --lane 1/2 ran is the first lane of the recorded split
    # ids name no path of this checkout: tests/durations.json, written in one clone, must find them in every other
    named = [name for name in whole if str(REPO) in name]
    assert not named, named[:3]
    assert sorted(one + two) == sorted(whole) and not set(one) & set(two)
    sd = [name for name in whole if "stable_diffusion" in name and "native-torch" not in name and "test_matrix" in name]
    assert sd and (set(sd) <= set(one) or set(sd) <= set(two)), sd
    readers = [name for name in whole if "test_make_bench_bert" in name or "on_slurm_equal_a_local_run" in name]
    assert len(readers) >= 3 and (set(readers) <= set(one) or set(readers) <= set(two)), readers  # shared_smoke's
    measured = measured_seconds()
    work = [sum(measured.get(n, 1.0) for n in lane) for lane in (one, two)]
    assert abs(work[0] - work[1]) <= 0.25 * max(work), work  # within a quarter where measured


def durations_script():
    spec = importlib.util.spec_from_file_location("test_durations_script", REPO / "scripts" / "test_durations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_test_durations_writes_each_ran_tests_seconds_from_the_junit_reports(tmp_path):
    report = tmp_path / "lane.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest" hostname="ci-host" timestamp="2026-11-29T12:00:00">'
        '<testcase classname="tests.test_matrix" name="test_smoke_cell[jax__sam__fit__bs1__default]" time="35.214"/>'
        '<testcase classname="tests.test_tiers" name="test_x" time="0.5"/>'
        '<testcase classname="tests.test_tiers" name="test_skipped" time="0.01"><skipped message="no env"/></testcase>'
        "</testsuite></testsuites>"
    )
    out = tmp_path / "durations.json"
    (tmp_path / "durations.json").write_text(json.dumps({"seconds": {"tests/test_gone.py::test_old": 9.0}}))
    assert durations_script().main([str(report), "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["seconds"] == {"tests/test_matrix.py::test_smoke_cell[jax__sam__fit__bs1__default]": 35.21,
                                   "tests/test_tiers.py::test_x": 0.5}  # fmt: skip
    assert document["measured"] == [{"report": "lane.xml", "host": "ci-host", "started": "2026-11-29T12:00:00",
                                     "tests": 2}]  # fmt: skip
    assert measured_seconds(out) == document["seconds"]
    other = tmp_path / "other.xml"
    other.write_text("<coverage/>")
    assert durations_script().main([str(other), "--out", str(out)]) == 2
    assert json.loads(out.read_text()) == document  # a report it cannot read changes nothing


def junit(path: Path, cases: dict[str, float], host: str = "ci-host") -> Path:
    path.write_text(f'<testsuites><testsuite name="pytest" hostname="{host}" timestamp="2026-11-30T12:00:00">'
                    + "".join(f'<testcase classname="{c.rsplit("::")[0].removesuffix(".py").replace("/", ".")}" '
                              f'name="{c.split("::")[1]}" time="{t}"/>' for c, t in cases.items())
                    + "</testsuite></testsuites>")  # fmt: skip
    return path


def test_a_partial_report_updates_its_tests_and_keeps_the_others_saying_so(tmp_path, capsys):
    """make test-durations with one lane's report once replaced the whole file by that lane's few tests."""
    kept = "tests/test_lanes.py::test_make_test_durations_writes_each_ran_tests_seconds_from_the_junit_reports"
    out = tmp_path / "durations.json"
    out.write_text(json.dumps({"measured": [{"report": "test-lane-2.xml", "host": "h", "started": "s", "tests": 2}],
                               "seconds": {kept: 3.0, "tests/test_lanes.py::test_no_longer_here": 4.0,
                                           "tests/test_lanes.py::test_lanes_balance": 1.0}}))  # fmt: skip
    lane = junit(tmp_path / "test-lane-1.xml", {"tests/test_lanes.py::test_lanes_balance": 2.5})
    assert durations_script().main([str(lane), "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["seconds"] == {kept: 3.0, "tests/test_lanes.py::test_lanes_balance": 2.5}
    assert [m["report"] for m in document["measured"]] == ["test-lane-1.xml", "test-lane-2.xml"]
    said = capsys.readouterr().out
    assert "1 tests from 1 reports" in said and "1 kept from before" in said and "1 dropped" in said, said


def test_two_refreshes_at_once_keep_both_reports_tests(tmp_path, monkeypatch):
    import threading
    import time

    script = durations_script()
    out = tmp_path / "durations.json"
    read = script.read_report

    def slow(path):
        found = read(path)
        time.sleep(0.2)
        return found

    monkeypatch.setattr(script, "read_report", slow)
    monkeypatch.setattr(script, "existing", lambda node: True, raising=False)  # every test kept as existing
    reports = [junit(tmp_path / f"test-lane-{i}.xml", {f"tests/test_lanes.py::test_{i}": float(i)}) for i in (1, 2)]
    threads = [threading.Thread(target=script.main, args=([str(r), "--out", str(out)],)) for r in reports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert json.loads(out.read_text())["seconds"] == {"tests/test_lanes.py::test_1": 1.0,
                                                      "tests/test_lanes.py::test_2": 2.0}
