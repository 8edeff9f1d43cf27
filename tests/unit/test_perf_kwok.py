"""PF-08's closing note: the scale run's figures beside upstream's scheduler_perf figure, per CPU."""

from __future__ import annotations

from reports.perf import kwok_scale


def test_note_puts_each_mode_beside_upstream_per_cpu() -> None:
    figures = {
        "throughput_pods_per_s": 30.0,
        "throughput_pods_per_s_per_cpu": 15.0,
        "scheduling_s": {"p50": 1.0, "p99": 2.5},
        "create_to_running_s": {"p50": 1.1, "p99": 2.6},
    }
    measured = {
        "size": "1000x8x2000",
        "cpus": 2,
        "lab_up_s": 40.0,
        "kwok_nodes_ready_s": 12.3,
        "per_mode": {"literal": figures, "derived": figures},
        "upstream": {**kwok_scale.UPSTREAM, "pods_per_s_per_cpu": [109 / 6, 117 / 6]},
    }
    note = kwok_scale.note(measured)
    assert "literal 30.0 pods/s = 15.0 per CPU, scheduling p50 1.00s p99 2.50s" in note
    assert "derived 30.0 pods/s" in note
    assert "109-117 pods/s on 6 CPUs = 18.2-19.5 per CPU" in note
    assert "kwok made 1000 nodes Ready in 12.3s" in note
