"""The health playbooks' probes on every path that runs here: cupti.env on this machine and on simulated ones
(files through the System), profiler.kineto_log's parser on recorded Kineto logs and the whole probe on torch's
CPU profiler, ranks.baseline on built rank directories and per-rank reports."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, RunCli, ScriptedRunner, needs_torch, strict_json
from tests.helpers import LINED_UP, SKEWED, rank_dir
from wizard.environment import Environment, Workload
from wizard.probes.base import Status
from wizard.probes.cupti_env import CuptiEnvProbe, capabilities
from wizard.probes.kineto_log import KinetoLogProbe, parse_kineto_log
from wizard.probes.rank_baseline import RankBaselineProbe
from wizard.probes.registry import builtin_probes


def test_the_probes_are_registered() -> None:
    probes = builtin_probes()
    assert {"cupti.env", "profiler.kineto_log", "ranks.baseline"} <= set(probes)


# -- cupti.env ------------------------------------------------------------------------------------------------

ROOT_CAPS = "CapEff:\t000001ffffffffff\n"  # every capability, as root in a privileged container
PLAIN_CAPS = "CapEff:\t00000000a80425fb\n"  # docker's default set: no CAP_SYS_ADMIN (21), no CAP_PERFMON (38)


ELF_SO = "\x7fELF shared object"  # a library's contents, as this fake machine tells them (the real check: system.py)


class Machine:
    """A machine's files, for the System's read_file, list_dir and shared_object; ``links``: name -> target."""

    def __init__(self, files: dict[str, str], links: dict[str, str] | None = None) -> None:
        self.files = files
        self.links = links or {}

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def shared_object(self, path: str) -> str | None:
        real = self.links.get(path, path)
        return real if self.files.get(real, "").startswith("\x7fELF") else None

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})


def machine_env(
    tmp_path: Path,
    files: dict[str, str],
    *,
    ld_path: str = "",
    ldconfig: str = "",
    links: dict[str, str] | None = None,
) -> Environment:
    machine = Machine(files, links)
    return Environment.of(
        report_dir=tmp_path / "report",
        environ={"LD_LIBRARY_PATH": ld_path} if ld_path else {},
        read_file=machine.read,
        list_dir=machine.listdir,
        shared_object=machine.shared_object,
        runner=ScriptedRunner(
            ldconfig + '\nWARPWIZARD_RESULT {"ok": true, "dirs": ["/venv/site-packages/nvidia/cuda_cupti/lib"]}\n'
        ),
        which=lambda name: "/sbin/ldconfig" if name == "ldconfig" else None,
    )


def test_a_restricted_container_cannot_profile(tmp_path: Path) -> None:
    files = {
        "/proc/driver/nvidia/params": "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n",
        "/proc/self/status": "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n" + PLAIN_CAPS,
        "/.dockerenv": "",
        "/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12": ELF_SO,
    }
    result = CuptiEnvProbe().run(machine_env(tmp_path, files), {})
    assert result.status is Status.FAIL
    facts = result.facts
    assert (facts["profiling_restricted"], facts["cap_sys_admin"], facts["cap_perfmon"]) == (True, False, False)
    assert (facts["profiling_allowed"], facts["is_root"], facts["in_container"]) == (False, False, True)
    assert facts["restriction_source"] == "/proc/driver/nvidia/params: RmProfilingAdminOnly: 1"
    assert facts["cupti_duplicates"] is False
    assert facts["cupti_libraries"] == ["/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12"]


def test_the_restriction_from_modprobe_d_and_an_admin_process(tmp_path: Path) -> None:
    files = {
        "/etc/modprobe.d/nvidia.conf": "# profiling\noptions nvidia NVreg_RestrictProfilingToAdminUsers=1\n",
        "/etc/modprobe.d/other.conf": "options nvidia NVreg_RestrictProfilingToAdminUsers=0  # commented? no\n",
        "/proc/self/status": "Uid:\t0\t0\t0\t0\n" + ROOT_CAPS,
    }
    result = CuptiEnvProbe().run(machine_env(tmp_path, files), {})
    facts = result.facts
    assert facts["restriction_source"] == "/etc/modprobe.d/nvidia.conf: NVreg_RestrictProfilingToAdminUsers=1"
    assert (facts["profiling_restricted"], facts["cap_sys_admin"], facts["profiling_allowed"]) == (True, True, True)
    assert facts["is_root"] is True
    assert result.status is Status.WARN  # allowed, but no libcupti anywhere
    assert "no libcupti found" in result.summary


def test_a_second_libcupti_on_the_path(tmp_path: Path) -> None:
    files = {
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12": ELF_SO,
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so": "",  # a link to libcupti.so.12
        "/usr/local/cuda/extras/CUPTI/lib64/libnvperf_host.so": ELF_SO,
        "/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12": ELF_SO,
        "/usr/lib/x86_64-linux-gnu/libcupti.so.12": ELF_SO,
    }
    links = {"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so": "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12"}
    ldconfig = (
        "\tlibcupti.so.12 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcupti.so.12\n\tlibc.so.6 => /lib/libc.so.6\n"
    )
    env = machine_env(
        tmp_path, files, ld_path="/usr/local/cuda/extras/CUPTI/lib64:/opt/empty", ldconfig=ldconfig, links=links
    )
    result = CuptiEnvProbe().run(env, {})
    facts = result.facts
    assert result.status is Status.FAIL and facts["cupti_duplicates"] is True
    assert facts["cupti_on_path"] == ["/usr/local/cuda/extras/CUPTI/lib64"]
    assert facts["cupti_in_torch"] == ["/venv/site-packages/nvidia/cuda_cupti/lib"]
    assert facts["cupti_duplicate_reasons"] == [
        "LD_LIBRARY_PATH's /usr/local/cuda/extras/CUPTI/lib64 comes before the one torch ships in "
        "/venv/site-packages/nvidia/cuda_cupti/lib"
    ]
    assert facts["cupti_libraries"] == [
        "/usr/lib/x86_64-linux-gnu/libcupti.so.12",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12",
        "/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
    ]
    assert facts["capabilities"] is None and facts["profiling_restricted"] is None  # nothing readable: unknown
    assert env.system.runner.calls[1] == ["/sbin/ldconfig", "-p"]  # type: ignore[attr-defined]


def test_capabilities_are_decoded_from_cap_eff() -> None:
    assert capabilities(PLAIN_CAPS) == ([], None)
    assert capabilities("CapEff:\t0000004000200000\nUid:\t5\t0\t0\t0\n") == (["CAP_SYS_ADMIN", "CAP_PERFMON"], 0)
    assert capabilities(None) == (None, None)


def test_cupti_env_on_this_machine(tmp_path: Path) -> None:
    """The real System: this process's /proc, ldconfig and the harness in this interpreter (torch found
    without importing it); nothing here restricts or duplicates, whatever the machine has."""
    result = CuptiEnvProbe().run(Environment.of(report_dir=tmp_path / "report"), {})
    facts = result.facts
    assert result.status in (Status.PASS, Status.WARN, Status.FAIL)
    assert isinstance(facts["capabilities"], list)  # Linux: /proc/self/status is readable
    assert facts["is_root"] == (os.geteuid() == 0)
    assert all(isinstance(p, str) and "libcupti" in p for p in facts["cupti_libraries"])


# -- profiler.kineto_log -------------------------------------------------------------------------------------

# Recorded: torch 2.13.0+cpu, KINETO_LOG_LEVEL=0, one session (see test_kineto_log_on_the_cpu_profiler)
CPU_LOG = """\
INFO:2026-11-30 23:25:46 30826:30826 GenericActivityProfiler.cpp:562] Tracing starting in 6s
STAGE:2026-11-30 23:25:47 30826:30826 SyncActivityProfilerHandler.cpp:60] Completed Stage: Collection
INFO:2026-11-30 23:25:47 30826:30826 GenericActivityProfiler.cpp:146] Processing 1 CPU buffers
INFO:2026-11-30 23:25:47 30826:30826 GenericActivityProfiler.cpp:217] Record counts: Out-of-range = 0, \
Blocklisted runtime = 0, Invalid ext correlations = 0, CPU GPU out-of-order = 0, Unexpected CUDA events = 0, \
GPU stopped early? = 0
"""
DROPPING_LOG = """\
INFO:2026-08-02 10:01:12 77:77 CuptiActivityProfiler.cpp:1012] Processed 41960 GPU records (1342720 bytes)
INFO:2026-08-02 10:01:12 77:77 CuptiActivityProfiler.cpp:1120] Record counts: Out-of-range = 1203, \
Blocklisted runtime = 0, Invalid ext correlations = 0, CPU GPU out-of-order = 0, Unexpected CUDA events = 0, \
CUPTI stopped early? = 0
WARNING:2026-08-02 10:01:12 77:77 CuptiActivityApi.cpp:301] CUPTI dropped 64 activity records
"""
FAILING_LOG = """\
ERROR:2024-02-05 11:00:00 1:1 CuptiActivityApi.cpp:94] cuptiActivityEnable failed with CUPTI_ERROR_NOT_INITIALIZED
WARNING:2024-02-05 11:00:00 1:1 CuptiActivityProfiler.cpp:200] CUDA profiler activities will be missing
ERROR:2021-09-21 ... CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: see ERR_NVGPUCTRPERM
"""


def test_the_parser_reads_record_counts_and_cupti_errors() -> None:
    cpu = parse_kineto_log(CPU_LOG)
    assert cpu.record_counts == {
        "Out-of-range": 0,
        "Blocklisted runtime": 0,
        "Invalid ext correlations": 0,
        "CPU GPU out-of-order": 0,
        "Unexpected CUDA events": 0,
        "GPU stopped early?": 0,
    }
    assert (cpu.out_of_range, cpu.cupti_errors, cpu.cupti_unavailable, cpu.dropped_records) == (0, [], False, 0)
    dropping = parse_kineto_log(DROPPING_LOG)
    assert (dropping.out_of_range, dropping.dropped_records, dropping.gpu_records) == (1203, 64, 41960)
    failing = parse_kineto_log(FAILING_LOG)
    assert failing.cupti_errors == ["CUPTI_ERROR_NOT_INITIALIZED", "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]
    assert failing.cupti_unavailable and failing.nvgpuctrperm
    assert parse_kineto_log("") == parse_kineto_log("nothing about the profiler\n")


@needs_torch
def test_kineto_log_on_the_cpu_profiler(tmp_path: Path) -> None:
    """The whole probe for real: torch 2.13's CPU profiler in a fresh process, its Kineto log read; no kernel
    ran, so the comparison with launches is skipped with the reason."""
    workload = Workload.parse(f"python {EXAMPLES / 'workloads' / 'tiny_matmul.py'}", sys.executable)
    env = Environment.of(report_dir=tmp_path / "report", workload=workload,
                         environ={**os.environ, "CUDA_VISIBLE_DEVICES": ""})  # fmt: skip
    result = KinetoLogProbe().run(env, {}, timeout=180)
    facts = result.facts
    assert result.status is Status.SKIP, result.summary
    assert facts["reason"] == "no CUDA device: no kernels to count against launches"
    assert facts["cuda_available"] is False
    assert facts["record_counts"]["Out-of-range"] == 0  # Kineto printed its counts at KINETO_LOG_LEVEL=0
    assert facts["cupti_errors"] == [] and facts["kernels"] == 0
    assert strict_json(Path(facts["trace"]).read_text())["traceEvents"]
    assert "Kineto's record counts: Out-of-range = 0" in " ".join(result.evidence)


def test_kineto_log_without_a_workload_skips(tmp_path: Path) -> None:
    result = KinetoLogProbe().run(Environment.of(report_dir=tmp_path / "report"), {})
    assert result.status is Status.SKIP and result.facts == {"reason": "no workload"}


def test_kineto_log_judges_a_recorded_gpu_log(tmp_path: Path) -> None:
    """What a CUDA machine prints, through the injected runner: the harness is not started."""
    out = DROPPING_LOG + 'WARPWIZARD_RESULT {"ok": true, "exit_code": 0, "cuda_available": true}\n'
    workload = Workload.parse("python train.py", sys.executable)
    runner = ScriptedRunner(out)
    env = Environment.of(report_dir=tmp_path / "report", workload=workload, runner=runner)
    result = KinetoLogProbe().run(env, {"log_level": 1})
    assert result.status is Status.FAIL
    assert result.summary == "Kineto dropped 1203 records as out of the capture window"
    assert (result.facts["out_of_range"], result.facts["dropped_records"]) == (1203, 64)
    assert runner.calls[0][2:4] == ["profile", str(tmp_path / "report" / "kineto-log" / "single-session.json")]


# -- ranks.baseline ------------------------------------------------------------------------------------------


def test_baseline_shows_the_skew_was_waiting(tmp_path: Path) -> None:
    job, baseline = rank_dir(tmp_path / "job", SKEWED), rank_dir(tmp_path / "after-barrier", LINED_UP)
    result = RankBaselineProbe().run(
        Environment.of(report_dir=tmp_path), {"paths": str(job), "baseline": str(baseline)}
    )
    assert result.status is Status.FAIL
    facts = result.facts
    assert (facts["skew_median_us"], facts["skew_max_us"]) == (600.0, 600.0)
    assert (facts["baseline_median_us"], facts["baseline_max_us"], facts["skew_removed_us"]) == (2.0, 2.0, 598.0)
    assert (facts["waiting"], facts["straggler_rank"], facts["ranks"]) == (True, 2, [0, 1, 2])
    same = RankBaselineProbe().run(Environment.of(report_dir=tmp_path), {"paths": str(job), "baseline": str(job)})
    assert same.status is Status.PASS and same.facts["waiting"] is False


def test_baseline_from_per_rank_reports_equals_the_directory(tmp_path: Path, run_cli: RunCli) -> None:
    """Each node writes its own --json report (as the cluster launchers do); the probe merges them."""
    job, baseline = rank_dir(tmp_path / "job", SKEWED), rank_dir(tmp_path / "after-barrier", LINED_UP)
    reports: dict[str, list[str]] = {"job": [], "after-barrier": []}
    for side, directory in (("job", job), ("after-barrier", baseline)):
        for trace in sorted(directory.iterdir()):
            result = run_cli("trace", "inspect", "--json", "--fail-on", "never", str(trace))
            summary = tmp_path / f"{side}-{trace.name}"
            summary.write_text(result.stdout)
            reports[side].append(str(summary))
    env = Environment.of(report_dir=tmp_path)
    merged = RankBaselineProbe().run(env, {"paths": reports["job"], "baseline": reports["after-barrier"]})
    whole = RankBaselineProbe().run(env, {"paths": str(job), "baseline": str(baseline)})
    assert merged.facts == whole.facts and merged.status is whole.status
    twice = RankBaselineProbe().run(env, {"paths": [reports["job"][0]] * 2, "baseline": reports["after-barrier"]})
    assert twice.status is Status.ERROR and "a rank appears in two reports" in twice.summary


@pytest.mark.parametrize(
    ("params", "status", "reason"),
    [
        ({"paths": "JOB"}, Status.SKIP, "no baseline traces"),
        ({"paths": "", "baseline": "JOB"}, Status.SKIP, "no traces"),
        ({"paths": "ONE", "baseline": "JOB"}, Status.SKIP, "not a rank directory"),
    ],
)
def test_baseline_skips_with_the_reason(tmp_path: Path, params: dict[str, Any], status: Status, reason: str) -> None:
    job = rank_dir(tmp_path / "job", SKEWED)
    paths = {"JOB": str(job), "ONE": str(job / "rank0.json")}
    result = RankBaselineProbe().run(
        Environment.of(report_dir=tmp_path), {k: paths.get(v, v) for k, v in params.items()}
    )
    assert result.status is status
    assert reason in result.facts["reason"]


def test_the_baseline_through_the_probe_command(run_cli: RunCli) -> None:
    """docs/clusters.md's command on the shipped rank-skew example: exit 1 (it found the waiting), one report."""
    traces = EXAMPLES / "traces"
    result = run_cli("probe", "ranks.baseline", "--param", f"paths={traces / 'rank-skew'}",
                     "--param", f"baseline={traces / 'rank-skew-baseline'}", "--json")  # fmt: skip
    assert result.returncode == 1, result.stderr
    (entry,) = strict_json(result.stdout)["entries"]
    assert (entry["status"], entry["facts"]["skew_removed_us"], entry["facts"]["straggler_rank"]) == ("fail", 997.0, 2)
