import os

from click.testing import CliRunner

from dralab.cli import main


def test_up_as_non_root_exits_2_and_says_so(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    result = CliRunner().invoke(main, ["up", "--name", "nonroot"])
    assert result.exit_code == 2
    assert "must run as root" in result.output
    assert not (tmp_path / "labs").exists()


def test_malformed_feature_gates_exit_2_naming_the_flag() -> None:
    result = CliRunner().invoke(main, ["up", "--feature-gates", "DRADerivedAttributes"])
    assert result.exit_code == 2 and "--feature-gates 'DRADerivedAttributes': expected NAME=true" in result.output


def test_invalid_lab_name_exits_2_naming_the_field() -> None:
    result = CliRunner().invoke(main, ["up", "--name", "Not_A_Label"])
    assert result.exit_code == 2 and "name:" in result.output and "DNS label" in result.output


def test_qualify_refuses_bad_input_before_building_or_starting_anything(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DRALAB_LABS", str(tmp_path))
    cases = {
        ("--cluster", "kubeconfig"): "--cluster kubeconfig needs --kubeconfig PATH of an existing file",
        ("--kubeconfig", __file__): "--kubeconfig is for --cluster kubeconfig",
        ("--gates-on", "DRAResourcePoolStatus"): "--gates-on describes a kubeconfig cluster",
        ("--focus", "([unclosed"): "--focus '([unclosed' is not a regular expression",
        ("--procs", "0"): "0 is not in the range 1<=x<=16",
        ("--cluster", "kind", "--kubernetes-version", "v1.36.3"): "kind labs run Kubernetes v1.37.1 only",
    }
    for args, said in cases.items():
        result = CliRunner().invoke(main, ["qualify", "--out", str(tmp_path / "out"), *args])
        assert result.exit_code == 2 and said in result.output, (args, result.output)
    assert not (tmp_path / "labs").exists() and not (tmp_path / "out").exists()
