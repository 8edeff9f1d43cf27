"""The soak's table and its judgement: a seed whose verdicts changed between its runs is named
with the IDs that changed; the lab's long-lived processes are told apart by their program."""

from __future__ import annotations

from reports.soak import Run, differences, table, watched_kind


def run(seed: int, **verdicts: str) -> Run:
    return Run(
        seed,
        0,
        100.0,
        "CERTIFIED",
        {k.replace("_", "-"): v for k, v in verdicts.items()},
        "none",
        {"sysfs server": {"rss_kib": 7756, "fds": 12}},
    )


def test_a_seed_whose_verdicts_changed_is_named_with_what_changed() -> None:
    runs = [run(1, KP_01="PASS", KP_07="PASS"), run(1, KP_01="PASS", KP_07="FAIL"), run(2, KP_01="PASS")]
    assert differences(runs) == ["seed 1, run 2 against its first: {'KP-07': ['PASS', 'FAIL']}"]
    assert differences([run(1, KP_01="PASS"), run(2, KP_01="FAIL")]) == []  # seeds apart are not compared
    lines = table(runs).splitlines()
    assert lines[0].split()[:6] == ["run", "seed", "outcome", "FAIL", "s", "residue"] and "7756 / 12" in lines[1]
    assert lines[2].split()[3] == "KP-07"


def test_the_watched_processes_are_known_by_their_program_not_their_arguments() -> None:
    agent = ["/venv/bin/python", "-m", "fake_hardware.agent", "--sysfs-fuse", "/cache/sysfs-fuse"]
    assert watched_kind(agent) == "hardware agent"
    assert watched_kind(["/cache/drivers-under-test/sysfs-fuse", "--backing", "x"]) == "sysfs server"
    assert watched_kind(["/cache/plugin-recorder", "--driver-registry=/x"]) == "plugin-recorder"
    assert watched_kind(["/usr/bin/containerd"]) is None and watched_kind([""]) is None


def test_two_soaks_side_by_side_give_each_ids_verdicts_and_the_times() -> None:
    from reports.soak import side_by_side

    lines = side_by_side([run(1, KP_01="PASS")], [run(1, KP_01="ERROR")], ("idle", "loaded (load 2)")).splitlines()
    assert lines[0].split() == ["ID", "idle", "loaded", "(load", "2)"]
    assert lines[1].split() == ["KP-01", "PASS", "ERROR"] and lines[2].split() == ["seconds", "100", "100"]


def test_the_machines_figures_are_summed_up_per_run_and_shown_beside_the_verdicts(monkeypatch, tmp_path) -> None:
    from reports import soak

    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))  # no lab on this machine: the load average alone
    machine = soak.Machine()
    machine.sample()
    assert len(machine.loads) == 1 and machine.api_ms == []
    machine.loads, machine.api_ms, machine.pod_start_s, machine.factors = [0.5, 3.0], [4.0, 9.0, 30.0], [1.0, 2.0], [1.0, 2.5]
    figures = machine.figures()
    assert figures == {"load_max": 3.0, "api_ms": 9.0, "pod_start_s": 1.5, "pace_max": 2.5}
    loaded = Run(1, 0, 90.0, "CERTIFIED", {"KP-01": "PASS"}, "none", {}, figures)
    lines = table([loaded]).splitlines()
    assert "load max" in lines[0] and "pace x" in lines[0] and "2.5" in lines[1]
    rows = soak.side_by_side([run(1, KP_01="PASS")], [loaded], ("idle", "loaded")).splitlines()
    assert rows[-1].split() == ["pace", "x", "-", "2.5"]


def test_a_watched_process_whose_peak_grew_from_the_first_run_to_the_last_is_named_growing() -> None:
    from reports.soak import growth

    def peaks(rss: int, fds: int) -> Run:
        return Run(1, 0, 1.0, "CERTIFIED", {}, "none", {"plugin-recorder": {"rss_kib": rss, "fds": fds}})

    assert growth([peaks(17000, 24), peaks(18000, 25), peaks(17500, 24)]) == [
        "plugin-recorder: RSS 17000 -> 17500 KiB, open files 24 -> 24 over 3 run(s)"
    ]
    assert growth([peaks(17000, 24), peaks(30000, 24)])[0].endswith("GROWING")
    assert growth([peaks(17000, 24), peaks(17000, 40)])[0].endswith("GROWING")
