"""Who runs the commands the pages give that this machine's unit tests cannot: each lab command
(it starts a lab, builds components or needs root), keyed by the command exactly as the page or
the Makefile gives it (`dralab ...`, `make ...`, `pytest ...`: the program, then its words), and
the test that runs it. `how` says where the test's run differs from the page's words (its own
--out, a narrower --only): empty when the test runs these very words. tests/unit/test_doc_commands.py
fails a page's lab command that is in neither RUNS nor UNRUN, naming the page and line.

UNRUN lists lab commands no test runs yet, each with why: they are shown as expected failures
(strict: once a test runs one, add it to RUNS and take it off UNRUN). OTHER_PROGRAMS are the
programs other than dralab's, make's and pytest that pages give, with why no test of dralab's
runs them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    tests: tuple[str, ...]  # pytest node IDs, `path::function` (a parametrized one without its [id])
    how: str = ""


def run(*tests: str, how: str = "") -> Run:
    return Run(tests, how)


LIFECYCLE = "tests/e2e/test_lab_lifecycle.py"
GUIDE = "tests/e2e/test_certify_guide.py"
TEMPLATES = "tests/e2e/test_ci_templates.py"
HW = "tests/e2e/test_hardware_lab.py"
PUBLIC = "tests/e2e/test_public_drivers.py::test_a_public_driver_fails_only_what_its_findings_explain"
NARROWED = "the device plugin suite only (the test's CERTIFY_ARGS: --only DP), on the vendor profile of tests/e2e/acme_vendor.py"
SOAK = "make soak and make bench-load (15 minutes to hours): no test runs dralab soak (tests/unit/test_soak.py: its parts)"
# The guide's step 5 (`dralab up`, `driver deploy`, `driver remove`, `down` by hand).
BY_HAND = "tests/e2e/test_guide_by_hand.py::test_the_guides_driver_and_a_reference_driver_deployed_and_removed_by_hand"

RUNS: dict[str, Run] = {
    # The guide's step 5 and the driver commands by hand, in the pages' words.
    "dralab up --name try --hardware dgx-like": run(BY_HAND),
    "dralab driver deploy --profile deploy/dralab/profile.yaml --lab try": run(BY_HAND),
    "dralab driver remove --profile deploy/dralab/profile.yaml --lab try": run(BY_HAND),
    "dralab down --name try": run(BY_HAND),
    "dralab mutants --list": run(
        "tests/unit/test_mutants.py::test_the_command_lists_the_drawn_mutants_and_runs_and_reports_the_others",
        how="with --budget and --seed, go-mutesting's listing played (test_go_mutesting_lists_the_mutants_of_a_tiny_module runs it)",
    ),
    "dralab driver deploy --profile gpu [--variant leave-files] [--lab NAME | --kubeconfig FILE]": run(
        BY_HAND, how="with --variant leave-files --lab try"
    ),
    "dralab driver remove --profile gpu [--lab NAME | --kubeconfig FILE]": run(BY_HAND, how="with --lab try"),
    # The lab by hand.
    "dralab provision": run(f"{LIFECYCLE}::test_second_provision_builds_nothing"),
    "dralab up [--name NAME] [--nodes 2] [--slice-only-nodes N] [--feature-gates DRADerivedAttributes=true] "
    "[--scheduler-feature-gates ...] [--runtime-config resource.k8s.io/v1beta2=true] [--kubelet-root-dir /var/lib/kubelet] "
    "[--kubernetes-version v1.36.3] [--offline]": run(
        f"{LIFECYCLE}::test_up_down_residue_three_times_and_bring_up_figures",
        f"{LIFECYCLE}::test_unknown_feature_gate_is_refused_before_anything_starts",
        how="--name, --offline and --feature-gates; the other options are the lab fixtures' (their Python API, not the command)",
    ),
    "dralab status": run(f"{LIFECYCLE}::test_dead_component_is_reported_by_name_with_its_log", how="with --name"),
    "dralab down [--force]": run(
        f"{LIFECYCLE}::test_up_down_residue_three_times_and_bring_up_figures",
        f"{LIFECYCLE}::test_lab_of_a_crashed_run_is_refused_until_down_force_removes_it",
        how="with --name",
    ),
    "dralab residue": run(f"{LIFECYCLE}::test_up_down_residue_three_times_and_bring_up_figures", how="with --name"),
    "pytest suites --cluster=kubeconfig --kubeconfig ~/.kube/config [--kubelet-root-dir PATH]": run(
        "tests/e2e/test_kubeconfig_provider.py::test_suites_run_against_an_existing_cluster_through_its_kubeconfig",
        how="suites/lab/test_cluster.py only, on the session lab's kubeconfig",
    ),
    "dralab qualify [--cluster local|kind|kubeconfig] [--kubeconfig PATH] [--kubernetes-version V] [--procs 3] [--focus REGEX] "
    "[--out qualify-out]": run(
        "tests/e2e/test_qualify.py::test_a_subset_of_upstreams_dra_suite_passes_on_the_local_lab_with_a_report_per_spec",
        how="on the local lab, --focus of five specs, --procs 2",
    ),
    "dralab qualify --out qualify-local": run(
        "tests/e2e/test_qualify.py::test_a_subset_of_upstreams_dra_suite_passes_on_the_local_lab_with_a_report_per_spec",
        how="a --focus of five specs of the 132",
    ),
    # Emulated hardware.
    "dralab hw up --profile dgx-like [--nodes 2]": run(f"{HW}::test_faults_show_up_in_tree_and_netdevs_and_clear", how="with --name"),
    "dralab hw show [--name LAB] [--json]": run(f"{HW}::test_faults_show_up_in_tree_and_netdevs_and_clear", how="without --json"),
    "dralab hw fault remove|restore|unhealthy|healthy --node node-1 --device gpu3|nic1|nic1-vf2": run(
        f"{HW}::test_faults_show_up_in_tree_and_netdevs_and_clear", how="with --name, on gpu5, nic1 and nic2-vf1"
    ),
    "dralab hw down": run(f"{HW}::test_faults_show_up_in_tree_and_netdevs_and_clear", how="with --name"),
    # The guide, on the vendor of tests/e2e/acme_vendor.py.
    "dralab image build --tag registry.acme.example/gpu-driver:1.0 --out acme-gpu-driver.tar "
    "--file ./bin/gpu-kubeletplugin:/usr/bin/gpu-kubeletplugin --entrypoint /usr/bin/gpu-kubeletplugin": run(
        f"{GUIDE}::test_schema_and_validate", how="the reference device plugin's binary, under the vendor's tag and paths (acme_vendor.py)"
    ),
    "dralab driver validate deploy/dralab/profile.yaml": run(
        f"{GUIDE}::test_schema_and_validate", how="the profile in the vendor's directory"
    ),
    "dralab certify --driver deploy/dralab/profile.yaml --out out": run(f"{GUIDE}::test_certify_and_read_the_report", how=NARROWED),
    "dralab certify --cluster kind": run(f"{TEMPLATES}::test_github_actions_workflow", f"{TEMPLATES}::test_gitlab_ci_job", how=NARROWED),
    "dralab certify --cluster kind [--driver PROFILE] [--only MD] [--out DIR]": run(
        f"{TEMPLATES}::test_github_actions_workflow", f"{TEMPLATES}::test_gitlab_ci_job", how=NARROWED
    ),
    "pytest suites --cluster=kind [--driver PROFILE]": run(
        f"{TEMPLATES}::test_github_actions_workflow",
        how="as dralab certify --cluster kind runs it (python -m pytest suites/... --cluster=kind --driver PROFILE), " + NARROWED,
    ),
    # docs/ci's templates, run as their CI system runs them.
    "dralab driver validate $PROFILE": run(f"{TEMPLATES}::test_github_actions_workflow", f"{TEMPLATES}::test_gitlab_ci_job"),
    "dralab certify --cluster kind --driver $PROFILE --out out $CERTIFY_ARGS": run(
        f"{TEMPLATES}::test_github_actions_workflow", f"{TEMPLATES}::test_gitlab_ci_job", how="CERTIFY_ARGS=--only DP"
    ),
    "dralab matrix merge cells/* --out matrix $MATRIX_ARGS": run(
        f"{TEMPLATES}::test_github_actions_nightly_matrix",
        f"{TEMPLATES}::test_gitlab_ci_nightly_matrix",
        how="over cell records standing in for the cell jobs' certifications",
    ),
    "dralab matrix merge DIR... --out matrix": run(
        "tests/unit/test_matrix.py::test_merge_joins_the_cells_as_one_run_with_reports_copied_history_and_change_flags",
        how="over cells `dralab matrix --cell` recorded with the certification stubbed (no lab)",
    ),
    # Certifications.
    "dralab certify --driver dra-driver-cpu --out out-cpu": run(PUBLIC, how="on DEP and KP with --seed 1, into the test's --out"),
    "dralab certify --driver dranet": run(PUBLIC, how="on DEP and KP with --seed 1"),
    "dralab certify --driver nvidia-gpu": run(PUBLIC, how="on DEP and KP with --seed 1"),
    "dralab certify --driver dra-driver-cpu": run(PUBLIC, how="on DEP and KP with --seed 1"),
    "dralab certify [--driver PROFILE ...] [--variant NAME] [--cluster local|kind|kubeconfig] [--kubeconfig FILE] [--hardware PROFILE] "
    "[--only MD,ST,DA-04] [--kubernetes-version v1.36.3] [--shards N] [--out DIR]": run(
        "tests/e2e/test_certify.py::test_certify_against_a_broken_variant_exits_1_and_the_html_names_the_failure",
        f"{TEMPLATES}::test_github_actions_workflow",
        how="--driver, --variant, --only and --out on the local lab, --cluster kind in the CI template's test",
    ),
    "dralab selfcheck [--variant NAME|DRIVER:NAME ...] [--only MD,ST-02] [--out DIR]": run(
        "tests/e2e/test_selfcheck.py::test_selfcheck_judges_a_broken_and_a_valid_variant_on_one_lab",
        how="--only MD-14,ST-04,DP-03 and three DRIVER:NAME variants",
    ),
    "dralab selfcheck --variant gpu:leave-cdi-spec --out /tmp/sc": run(
        "tests/e2e/test_selfcheck.py::test_selfcheck_judges_a_broken_and_a_valid_variant_on_one_lab",
        how="three other DRIVER:NAME variants, with --only",
    ),
    "dralab selfcheck --only KP-06 --out /tmp/sc-all": run(
        "tests/e2e/test_selfcheck.py::test_selfcheck_judges_a_broken_and_a_valid_variant_on_one_lab",
        how="--only MD-14,ST-04,DP-03, narrowed to three --variant",
    ),
    "dralab selfcheck --merge sc/part1 --merge sc/part2 --out sc/all": run(
        "tests/unit/test_selfcheck.py::test_a_merged_report_that_left_variants_unrun_exits_1_naming_them_and_links_each_part",
        how="one part, written by the test, two --variant of which it judged one",
    ),
    # Performance.
    "dralab perf [--out perf] [--certify-report out/report.json] [--only PF-01,...,PF-08] [--bringup-rounds 3] [--no-cold] "
    "[--startup-rounds 3] [--startup-pods 16] [--profile gpu] [--scale 100x8x200] [--scale-runs 1] [--allocator-count 10] "
    "[--allocator-nodes 100] [--allocator-benchtime 1s] [--kwok-scale 1000x8x2000] [--threshold 0.25] [--window 5]": run(
        "tests/e2e/test_perf.py::test_two_small_perf_runs_make_a_history_with_baselines", how="at a small size, twice into one --out"
    ),
    "dralab perf --out perf --certify-report out/report.json": run(
        "tests/e2e/test_perf.py::test_two_small_perf_runs_make_a_history_with_baselines",
        how="at a small size; --certify-report a recorded report, not make certify's",
    ),
    "pytest suites/derived_attributes/test_scale.py -s [--scale 500x8x1000] [--scale-runs 3] [--results-dir DIR]": run(
        "suites/derived_attributes/test_scale.py", how="the benchmark itself, which make perf-check runs at its default size"
    ),
    # make targets a test runs as they are.
    "make setup": run("tests/e2e/test_clean_setup.py::test_make_setup_in_a_fresh_clone_changes_nothing_in_the_system_interpreter"),
}

UNRUN: dict[str, str] = {
    # Lab options no test gives the command (the Python API's lab fixtures give them).
    "dralab up --hardware dgx-like": "no test starts a lab with emulated hardware through `dralab up` (the plugin's lab fixture does)",
    "dralab up --hardware-profile FILE": "no test gives `dralab up` a cluster hardware profile",
    "dralab hw up --cluster-profile FILE": "no test gives `dralab hw up` a cluster hardware profile",
    "dralab up --cluster kind --name k [--nodes 2] [--feature-gates ...] [--runtime-config ...] [--hardware dgx-like]": (
        "tests/e2e/test_kind_provider.py brings a kind lab up through the Python API, not `dralab up --cluster kind`"
    ),
    "dralab down --name k": "no test takes a kind lab down with `dralab down` (test_kind_provider.py uses the Python API)",
    "dralab up --kubernetes-version v1.36.3": "measured by hand (docs/lab.md's kubeconfig qualification); no test starts an older version",
    "dralab qualify --cluster kubeconfig --kubeconfig FILE": "no test qualifies a kubeconfig cluster (test_qualify.py: the local lab)",
    "dralab qualify --cluster kind --out qualify-kind": "make qualify's kind half (22 minutes): no test qualifies a kind lab",
    # The long runs: the Makefile's jobs, not tests.
    "dralab certify --out out": "make certify, the main job (13 minutes): no test certifies everything; make test runs the same suites",
    "dralab certify --driver gpu-nvml --out out-nvml": "make certify-nvml: no test certifies gpu-nvml (test_nvml_driver.py deploys it)",
    "dralab certify --driver gpu --only KP-06 --out /tmp/kp06": (
        "docs/adding-a-check.md's example: no test certifies gpu on KP-06 alone (make test runs KP-06's checks in the suites)"
    ),
    "dralab certify --shards 1": "no test certifies with --shards 1 (docs/suites.md: how the DA scale benchmark gets the machine)",
    "dralab selfcheck --out selfcheck": "make selfcheck, every variant (40 minutes to hours): test_selfcheck.py runs three",
    "dralab selfcheck --seeds 10 --out seeds": "make seeds, hours: no test runs a seed sweep",
    "dralab mutants --budget 10 --seed 1 --out mutants": (
        "make mutants, a certification or two a mutant: no test runs one (tests/unit/test_mutants.py: its parts, certification played)"
    ),
    "dralab selfcheck --seeds 10 [--variant ...]": "a seed sweep (hours): no test runs one",
    "dralab selfcheck --seeds N": "a seed sweep (hours): no test runs one",
    "dralab selfcheck --lab-prefix sweep2 ...": "no test runs two selfchecks side by side",
    "dralab selfcheck --shard 1/3 --lab-prefix sa --out sc/part1": (
        "a third of make selfcheck (an hour): no test runs a shard (test_selfcheck.py checks the split every part computes)"
    ),
    "dralab matrix --qualify": "the nightly matrix (hours): tests/unit/test_matrix.py runs it with qualify and certify stubbed",
    "dralab matrix --qualify --out matrix": "make matrix, the nightly job (hours): test_matrix.py runs it with qualify and certify stubbed",
    "dralab matrix --cell $CELL --out cells/$CELL $CELL_ARGS": (
        "the matrix templates' cell jobs: test_ci_templates.py parses them, tests/unit/test_matrix.py runs one with certify stubbed"
    ),
    "dralab provision --kubernetes-version $KUBERNETES_VERSION": "the matrix templates' cell jobs: parsed by test_ci_templates.py, not run",
    "dralab perf --only PF-07 --out perf": "make perf-allocator (a minute, no lab): make test runs its Go test and one iteration",
    "dralab soak --runs 1 [--load N] -- --only KP": SOAK,
    "dralab soak --runs 1 --load 4": SOAK,
    "dralab soak --runs 10 --seed 1 --out soak/one-seed --": SOAK,
    "dralab soak --runs 10 --seed 1 --vary-seeds --out soak/ten-seeds --": SOAK,
    "dralab soak --runs 1 --out bench-load/idle -- --only KP": SOAK,
    "dralab soak --runs 1 --load 2 --out bench-load/load-2 --beside bench-load/idle -- --only KP": SOAK,
    "dralab soak --runs 1 --load 4 --out bench-load/load-4 --beside bench-load/idle -- --only KP": SOAK,
}

OTHER_PROGRAMS: dict[str, str] = {
    "python -m venv": "the reader's virtualenv: tests/e2e/test_wheel.py and test_clean_setup.py make one so",
    "python -m pip": "make packages' install into .venv: tests/e2e/test_clean_setup.py runs it (make setup in a fresh clone)",
    "pip install": "into a virtualenv: tests/e2e/test_wheel.py installs the wheel so, test_clean_setup.py the checkout",
    "pip wheel": "the wheel: tests/package_files.py builds it so for test_wheel.py and test_ci_templates.py",
    "docker": "the vendor's own image build (docker buildx, save), outside dralab: the guide's test builds it with dralab image build",
    "skopeo": "the vendor's own image copy, outside dralab: the guide's test builds it with dralab image build",
}
