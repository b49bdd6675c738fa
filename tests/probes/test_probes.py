"""Probes on every path that runs without a GPU: real subprocesses, torch's CPU profiler, NVML absent
or simulated, recorded CUDA and tool outputs where only a GPU could produce them."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, HAVE_TORCH, REPO, RunCli, ScriptedRunner, budget, needs_torch, strict_json
from wizard.environment import Environment, Workload
from wizard.probes.base import Status
from wizard.probes.command import CommandProbe
from wizard.probes.common import HARNESS
from wizard.probes.cuda_errors import find_cuda_failure, parse_sanitizer
from wizard.probes.env import EnvProbe, collect_nvml
from wizard.probes.external_profilers import NcuPermissionError, parse_ncu_csv, read_nsys_sqlite
from wizard.probes.hardware_compare import HardwareCompareProbe
from wizard.probes.launch_blocking import LaunchBlockingProbe
from wizard.probes.metrics_sanity import MetricsSanityProbe
from wizard.probes.op_isolate import OpIsolateProbe
from wizard.probes.registry import builtin_probes
from wizard.probes.reprofile import ReprofileProbe
from wizard.probes.trace_inspect import TraceInspectProbe
from wizard.runner import SubprocessRunner
from wizard.trace.inspection.run import inspect_paths

OUTPUTS = REPO / "tests" / "data" / "outputs"


def env_for(tmp_path: Path, **kwargs: Any) -> Environment:
    return Environment.of(report_dir=tmp_path / "report", **kwargs)


# ---- the runner ----------------------------------------------------------------------------


def test_runner_kills_the_whole_tree_on_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    result = SubprocessRunner().run(["sh", "-c", script], timeout=1.0)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - started < budget(15)
    grandchild = int(pid_file.read_text())
    time.sleep(0.2)
    assert not alive(grandchild)


def alive(pid: int) -> bool:
    """Running, not a zombie: in a container nobody may reap an orphan that was killed."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_runner_bounds_output_and_keeps_both_ends(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(200000): print(f'line {i}')\nprint('THE END')"
    result = SubprocessRunner().run([sys.executable, "-c", code], timeout=60, log_path=tmp_path / "log.txt")
    assert result.ok and result.truncated_bytes > 0
    assert result.output.startswith("line 0") and result.output.rstrip().endswith("THE END")
    assert "bytes of output dropped" in result.output
    assert (tmp_path / "log.txt").exists()


def test_runner_missing_program() -> None:
    result = SubprocessRunner().run(["/no/such/program"], timeout=5)
    assert result.returncode == 127 and "cannot start" in result.output


def test_runner_interrupt_kills_children() -> None:
    import threading

    def interrupt() -> None:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        SubprocessRunner().run(["sleep", "30"], timeout=30)


# ---- NVML ------------------------------------------------------------------------------------


class FakeNvml:
    """A test double with NVML's shape: two GPUs, one in MIG mode, one feature unsupported."""

    class NVMLError_NotSupported(Exception):
        pass

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"580.159.04"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 13000

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return [b"NVIDIA H200", b"NVIDIA A100-SXM4-80GB"][h]

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-{h}"

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return [(9, 0), (8, 0)][h]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        class Mem:
            total, used = 150_000_000_000, 1_000_000

        return Mem()

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:
        return (h, h)

    def nvmlDeviceGetRetiredPages(self, h: int, cause: int) -> list[int]:
        raise self.NVMLError_NotSupported("Not Supported")

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return 1980


def test_nvml_through_a_test_double(tmp_path: Path) -> None:
    info = collect_nvml(env_for(tmp_path, nvml_loader=FakeNvml))
    assert info["status"] == "ok" and info["driver_version"] == "580.159.04"
    h200, a100 = info["gpus"]
    assert h200["name"] == "NVIDIA H200" and h200["compute_capability"] == "9.0"
    assert a100["mig_mode"] == {"current": 1, "pending": 1}
    assert h200["retired_pages"] == "could not collect: NVMLError_NotSupported"


def test_nvml_library_missing_is_could_not_collect(tmp_path: Path) -> None:
    class NoLibrary:
        class NVMLError_LibraryNotFound(Exception):
            pass

        def nvmlInit(self) -> None:
            raise self.NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    info = collect_nvml(env_for(tmp_path, nvml_loader=NoLibrary))
    assert info["status"].startswith("could not collect: NVMLError_LibraryNotFound") and info["gpus"] == []
    # issue 44 item 11: the env probe said the same NVML error twice, once as NVML's and once as the driver's
    result = EnvProbe().run(env_for(tmp_path, python="/usr/bin/false", nvml_loader=NoLibrary), {})
    said = [line for line in result.evidence if "NVML Shared Library Not Found" in line]
    assert said == [
        "NVML: could not collect: NVMLError_LibraryNotFound: NVML Shared Library Not Found (so no driver version)"
    ]

    def not_installed() -> Any:
        raise ImportError("No module named 'pynvml'")

    assert "nvidia-ml-py is not installed" in collect_nvml(env_for(tmp_path, nvml_loader=not_installed))["status"]


@needs_torch
def test_env_probe_for_real(tmp_path: Path) -> None:
    result = EnvProbe().run(env_for(tmp_path, nvml_loader=FakeNvml), {})
    assert result.facts["torch_version"].startswith("2.")
    assert result.facts["driver_version"] == "580.159.04"
    assert "torch.profiler" in result.facts["profilers"] and "legacy" in result.facts["profilers"]
    if not result.facts["cuda_available"]:
        assert result.status is Status.WARN and "GPU probes will skip" in result.summary
        assert result.facts["gpu_names"] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]  # from NVML


def test_env_probe_without_torch(tmp_path: Path) -> None:
    result = EnvProbe().run(env_for(tmp_path, python="/usr/bin/false"), {})
    assert result.facts["torch_version"].startswith("could not collect")
    # a newcomer's walk: "torch could not collect: ... (CUDA none: CPU build), cuda available: False" said a build
    # and a CUDA version of a torch that was never found
    (line,) = [line for line in result.evidence if line.startswith("torch ")]
    assert line.startswith("torch could not collect") and line.endswith("(asked /usr/bin/false)")
    assert "CPU build" not in line and "cuda available" not in line


def test_env_says_warpwizard_s_own_version_and_python_first(run_cli: RunCli) -> None:
    """A newcomer's walk: `warpwizard env` named torch's version and the GPUs but not its own or Python's."""
    import platform

    import wizard

    result = run_cli("env", "--python", "/usr/bin/false")
    first = result.stdout.splitlines()[0]
    assert result.status == 0
    assert first == f"warpwizard {wizard.__version__} on Python {platform.python_version()} ({sys.executable})"


# ---- recorded CUDA and tool outputs -------------------------------------------------------------


def test_cuda_error_with_python_frame() -> None:
    failure = find_cuda_failure((OUTPUTS / "illegal-memory-access.txt").read_text())
    assert failure is not None
    assert failure.message == "an illegal memory access was encountered"
    assert failure.exception == "torch.AcceleratorError"
    assert failure.error_name == "cudaErrorIllegalAddress"
    assert failure.python_frame == "/home/alice/proj/model.py:88 in forward"
    assert failure.dsa_unavailable


def test_device_side_assert() -> None:
    failure = find_cuda_failure((OUTPUTS / "device-assert.txt").read_text())
    assert failure is not None and failure.message == "device-side assert triggered"
    assert failure.device_assert is not None and "index out of bounds" in failure.device_assert
    assert failure.python_frame == "/work/repro.py:12 in <module>"
    assert failure.exception == "RuntimeError"


def test_clean_output_has_no_failure() -> None:
    assert find_cuda_failure("step 0 loss 1.0\nstep 1 loss 0.9\n") is None


def test_compute_sanitizer_log() -> None:
    report = parse_sanitizer((OUTPUTS / "memcheck.log").read_text())
    assert report.errors == 1024
    assert report.first == "Invalid __global__ write of size 4 bytes"
    assert report.location is not None and "+0x1a0" in report.location and "scatter.cu:31" in report.location


def test_ncu_csv_and_permission_error() -> None:
    rows = parse_ncu_csv((OUTPUTS / "ncu-raw.csv").read_text())
    assert rows[0]["Kernel Name"] == "big_grid_kernel" and rows[0]["launch__grid_size"] == 4294967294
    assert rows[1]["device__attribute_multiprocessor_count"] is None  # n/a
    with pytest.raises(NcuPermissionError, match="NVreg_RestrictProfilingToAdminUsers=0"):
        parse_ncu_csv((OUTPUTS / "ncu-noperm.txt").read_text())


def test_nsys_sqlite_export(tmp_path: Path) -> None:
    db = tmp_path / "report.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER, value TEXT);
        CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, numMultiprocessors INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
          correlationId INTEGER, globalPid INTEGER, registersPerThread INTEGER, gridX INTEGER, gridY INTEGER,
          gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER,
          dynamicSharedMemory INTEGER, demangledName INTEGER, shortName INTEGER);
        INSERT INTO StringIds VALUES (1, 'big_grid_kernel'), (2, 'other');
        INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 42, 132);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 42, 16, 2147483647, 2, 1, 32, 1, 1, 0, 0, 1, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (30, 40, 0, 7, 2, 42, 16, 10, 1, 1, 32, 1, 1, 0, 0, 2, 2);
    """)
    con.commit()
    con.close()
    kernels = read_nsys_sqlite(db, name_filter="big_grid")
    assert len(kernels) == 1
    assert kernels[0].blocks_per_sm == pytest.approx(4294967294 / 132)  # no wrap in Python integers
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert read_nsys_sqlite(empty) == []


# ---- workload probes for real on the CPU ---------------------------------------------------------


@needs_torch
def test_reprofile_on_the_cpu_writes_a_trace_and_skips_honestly(tmp_path: Path) -> None:
    workload = Workload.parse(f"python {EXAMPLES / 'workloads' / 'tiny_matmul.py'}", sys.executable)
    env = env_for(tmp_path, workload=workload, environ={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    result = ReprofileProbe().run(env, {}, timeout=180)
    trace = Path(result.facts["trace"])
    assert trace.exists() and strict_json(trace.read_text())["traceEvents"]
    assert result.facts["cuda_available"] is False
    assert result.status is Status.SKIP and "no CUDA device" in result.summary
    skipped = result.facts["profilers_skipped"]
    assert skipped == {"legacy": "no CUDA device", "nsys": "no CUDA device", "ncu": "no CUDA device"}
    # issue 44 item 11: the evidence printed the dict ("skipped: {'legacy': ...}"); it says it in words
    assert result.evidence[-1] == "skipped (no CUDA device): legacy, nsys, ncu"
    assert not any("{" in line for line in result.evidence)


def test_the_skipped_profilers_are_said_grouped_by_why() -> None:
    from wizard.probes.reprofile import skipped_words

    said = skipped_words({"legacy": "did not complete", "nsys": "not installed", "ncu": "not installed"})
    assert said == "skipped (did not complete): legacy; skipped (not installed): nsys, ncu"


@needs_torch
def test_the_legacy_profiler_control_runs_here(tmp_path: Path) -> None:
    """The flagship skips it without CUDA; its harness path still runs on the CPU, as on a GPU."""
    from wizard.probes.common import run_harness

    out = tmp_path / "legacy.txt"
    workload = str(EXAMPLES / "workloads" / "tiny_matmul.py")
    run = run_harness(env_for(tmp_path), "legacy", [str(out), "--", workload], timeout=120, log_name="legacy")
    assert run.result is not None and run.result["profiler"] == "legacy" and run.result["exit_code"] == 0
    assert "aten::mm" in out.read_text()


@needs_torch
def test_reprofile_timeout_is_an_error_not_a_hang(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text("import time\ntime.sleep(300)\n")
    env = env_for(tmp_path, workload=Workload.parse(f"python {script}", sys.executable))
    started = time.monotonic()
    result = ReprofileProbe().run(env, {}, timeout=2)
    assert time.monotonic() - started < budget(30)
    assert result.status is Status.ERROR
    assert result.facts["timed_out"] is True and "killed" in result.summary


def test_no_workload_skips(tmp_path: Path) -> None:
    for probe in (ReprofileProbe(), LaunchBlockingProbe()):
        result = probe.run(env_for(tmp_path), {})
        assert result.status is Status.SKIP and "--workload" in result.summary


@needs_torch
def test_launch_blocking_for_real(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text(
        "import sys\n" + f"sys.stderr.write(open({str(OUTPUTS / 'illegal-memory-access.txt')!r}).read())\nsys.exit(1)\n"
    )
    env = env_for(tmp_path, workload=Workload.parse(f"python {script}", sys.executable))
    result = LaunchBlockingProbe().run(env, {}, timeout=120)
    assert result.status is Status.FAIL
    assert result.facts["cuda_error"] == "an illegal memory access was encountered"
    assert result.facts["python_frame"] == "/home/alice/proj/model.py:88 in forward"
    log = Path(result.files[0]).read_text()
    assert "illegal memory access" in log
    clean = tmp_path / "ok.py"
    clean.write_text("print('fine')\n")
    no_gpu = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # the same verdict on any machine
    ok = LaunchBlockingProbe().run(
        env_for(tmp_path, workload=Workload.parse(f"python {clean}", sys.executable), environ=no_gpu), {}, timeout=120
    )
    assert ok.status is Status.SKIP and ok.facts["exit_code"] == 0
    assert ok.summary.startswith("no CUDA device: the workload ran on the CPU")


@needs_torch
def test_op_isolate_writes_and_runs_a_repro(tmp_path: Path) -> None:
    # No GPU for the repro, on any machine: the CPU path is the one under test (the GPU path is
    # covered by tests/probes/test_gpu_recordings.py and scripts/gpu-check.sh).
    cpu_only = env_for(tmp_path, environ={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    result = OpIsolateProbe().run(
        cpu_only,
        {"op": "aten::mul", "input_dims": "[[64, 32], [64, 32]]", "input_types": '["float", "float"]'},
        timeout=180,
    )
    script = Path(result.facts["repro_script"])
    assert script.exists() and "aten::mul" in script.read_text()
    assert result.facts["device"] == "cpu"
    assert result.status is Status.SKIP and "ran alone on the CPU" in result.summary


@needs_torch
def test_op_isolate_from_a_trace(tmp_path: Path) -> None:
    result = OpIsolateProbe().run(
        env_for(tmp_path), {"trace": str(EXAMPLES / "traces" / "unexplained-aten-op.json")}, timeout=180
    )
    assert result.facts["op"] == "aten::mul" and result.facts["input_dims"] == "[[1024,256],[1024,256]]"


def test_op_isolate_refuses_huge_inputs_on_the_cpu(tmp_path: Path) -> None:
    result = OpIsolateProbe().run(
        env_for(tmp_path), {"trace": str(EXAMPLES / "traces" / "grid-overflow.json")}, timeout=60
    )
    assert result.facts["op"] == "aten::index_select"
    assert Path(result.facts["repro_script"]).exists()
    if HAVE_TORCH:
        assert result.status is Status.SKIP and "too large to run on the CPU" in result.summary


def transcript(host: str, gpu: str, mechanisms: list[str]) -> dict[str, Any]:
    return {
        "schema": "warpwizard.transcript/1",
        "host": {"hostname": host, "gpus": [gpu], "driver": "580"},
        "entries": [
            {"node": "inspect", "kind": "probe", "facts": {"mechanisms": mechanisms, "impossible": bool(mechanisms)}}
        ],
    }


def test_hardware_compare_across_machines(tmp_path: Path) -> None:
    reports = []
    for host, gpu, mech in [
        ("node1", "NVIDIA H100", ["A"]),
        ("node2", "NVIDIA H100", ["A"]),
        ("node3", "NVIDIA A100", []),
    ]:
        path = tmp_path / f"{host}.json"
        path.write_text(json.dumps(transcript(host, gpu, mech)))
        reports.append(str(path))
    result = HardwareCompareProbe().run(env_for(tmp_path, python="/usr/bin/false"), {"reports": reports})
    assert result.status is Status.FAIL and result.facts["hardware_specific"]
    assert result.facts["clean_on"] == ["node3 (NVIDIA A100)"]
    same = HardwareCompareProbe().run(env_for(tmp_path, python="/usr/bin/false"), {"reports": reports[:2]})
    assert same.status is Status.PASS and "not hardware specific" in same.summary
    alone = HardwareCompareProbe().run(env_for(tmp_path, python="/usr/bin/false"), {"reports": []})
    assert alone.status is Status.SKIP


def test_hardware_compare_trusts_the_repro_that_just_ran_on_the_cpu(tmp_path: Path) -> None:
    """op.isolate's repro ran on the CPU here: no torch process is started to list GPUs again."""
    runner = ScriptedRunner('WARPWIZARD_RESULT {"device": "cpu"}\n')
    env = env_for(tmp_path, runner=runner)
    OpIsolateProbe().run(env, {"op": "aten::mul", "input_dims": "[[2,2],[2,2]]", "input_types": '["float","float"]'})
    assert len(runner.calls) == 1
    result = HardwareCompareProbe().run(env, {})
    assert len(runner.calls) == 1
    assert result.status is Status.SKIP and "(no CUDA device here)" in result.summary
    other = tmp_path / "other-repro.py"  # a repro from elsewhere: the GPUs are listed
    other.write_text("pass\n")
    HardwareCompareProbe().run(env, {"repro": str(other)})
    assert len(runner.calls) == 2 and runner.calls[1][1:] == [str(HARNESS), "env"]


class TwoGpuMachine:
    """A runner standing in for a machine with two GPUs: torch lists them, and the repro run on
    each (CUDA_VISIBLE_DEVICES) writes the trace a real profiler would, with mechanism A on GPU 0."""

    def __init__(self) -> None:
        self.devices: list[str | None] = []

    def run(self, argv: Any, *, timeout: float, env: Any = None, cwd: Any = None, log_path: Any = None) -> Any:
        from wizard.runner import CommandResult
        from wizard.testing.traces import KernelSpec, TraceBuilder

        if argv[-1] == "env":  # the harness, asked for the devices
            devices = [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}, {"index": 1, "name": "NVIDIA H100 80GB HBM3"}]
            output = "WARPWIZARD_RESULT " + json.dumps({"ok": True, "devices": devices, "torch_version": "2.13.0"})
        else:  # the repro: python REPRO TRACE
            device = (env or {}).get("CUDA_VISIBLE_DEVICES")
            self.devices.append(device)
            b = TraceBuilder()
            grid = (100000, 30000, 1) if device == "0" else (1000, 1, 1)
            b.add(KernelSpec("index_kernel", grid, (256, 1, 1), op="aten::index_select"))
            b.write(argv[2])
            output = 'WARPWIZARD_RESULT {"ok": true, "device": "cuda"}'
        return CommandResult(list(argv), 0, output + "\n", 0.0, False)


def test_hardware_compare_runs_the_repro_on_each_gpu(tmp_path: Path) -> None:
    """The GPU path, on the CPU: one run per visible device, each trace inspected, then compared."""
    repro = tmp_path / "repro.py"
    repro.write_text("pass\n")
    machine = TwoGpuMachine()
    result = HardwareCompareProbe().run(env_for(tmp_path, runner=machine), {"repro": str(repro)})
    assert machine.devices == ["0", "1"]
    assert result.facts["gpus_tested"] == ["0: NVIDIA H100 80GB HBM3", "1: NVIDIA H100 80GB HBM3"]
    host = socket.gethostname()
    assert result.facts["reproduces_on"] == [f"{host} GPU 0 (NVIDIA H100 80GB HBM3)"]
    assert result.facts["clean_on"] == [f"{host} GPU 1 (NVIDIA H100 80GB HBM3)"]
    # the same GPU model on both sides: not the hardware model; look at what differs between them
    assert result.status is Status.PASS and result.facts["hardware_specific"] is False
    assert "with the same GPU model on both sides" in result.summary


def test_metrics_sanity(tmp_path: Path) -> None:
    bad = MetricsSanityProbe().run(env_for(tmp_path), {"trace": str(EXAMPLES / "traces" / "impossible-registers.json")})
    assert bad.status is Status.FAIL and bad.facts["impossible_registers"] == 1
    e = MetricsSanityProbe().run(env_for(tmp_path), {"trace": str(EXAMPLES / "traces" / "shared-memory-over-48k.json")})
    assert e.status is Status.WARN and e.facts["above_48kb"] == 2
    # both kernels are held back by registers and by shared memory alike; a tie goes to the first named
    assert e.facts["limiters"] == {"registers": 2, "shared memory": 2}
    assert e.facts["top_limiter"] == "registers"


def test_trace_inspect_probe_facts(tmp_path: Path) -> None:
    result = TraceInspectProbe().run(env_for(tmp_path), {"paths": str(EXAMPLES / "traces" / "grid-overflow.json")})
    assert result.status is Status.FAIL
    assert result.facts["mechanisms"] == ["A", "E"] and result.facts["worst_mechanism"] == "A"
    assert result.facts["worst_op"] == "aten::index_select"
    assert Path(result.files[0]).name == "trace-inspect.json"
    broken = TraceInspectProbe().run(env_for(tmp_path), {"paths": str(EXAMPLES / "traces" / "corrupt.json")})
    assert broken.status is Status.ERROR and "byte 767" in broken.facts["error"]


def test_command_probe_needs_opt_in(tmp_path: Path) -> None:
    refused = CommandProbe().run(env_for(tmp_path), {"argv": ["echo", "hi"]})
    assert refused.status is Status.SKIP and refused.facts["exit_code"] is None
    allowed = CommandProbe().run(env_for(tmp_path, allow_commands=True), {"argv": ["echo", "hi"]}, timeout=10)
    assert allowed.status is Status.PASS and allowed.facts["output_tail"] == "hi"


def _runs_here(tmp_path: Path) -> dict[str, list[tuple[Environment, dict[str, Any]]]]:
    """Each probe on the paths that run on this machine without torch or a GPU (the tests with torch
    run the rest, each checked by conftest's fact check too)."""
    traces = EXAMPLES / "traces"
    no_torch = env_for(tmp_path, python="/usr/bin/false")
    failing = Workload.parse("python -c 'import sys; sys.exit(3)'", sys.executable)
    return {
        "trace.inspect": [
            (no_torch, {"paths": str(traces / "grid-overflow.json")}),
            (no_torch, {"paths": str(traces / "corrupt.json")}),
            (no_torch, {"paths": []}),
            (no_torch, {"paths": [str(p) for p in sorted(traces.glob("*.json"))[:6]]}),
        ],
        "env": [(env_for(tmp_path, python="/usr/bin/false", nvml_loader=FakeNvml), {}), (no_torch, {})],
        "profiler.reprofile": [(no_torch, {}), (env_for(tmp_path, python="/usr/bin/false", workload=failing), {})],
        "cuda.launch_blocking": [(no_torch, {}), (env_for(tmp_path, python="/usr/bin/false", workload=failing), {})],
        "op.isolate": [(no_torch, {}), (no_torch, {"trace": str(traces / "grid-overflow.json")})],
        "hardware.compare": [(no_torch, {"reports": []}), (no_torch, {})],
        "metrics.sanity": [
            (no_torch, {"trace": str(traces / "impossible-registers.json")}),
            (no_torch, {"trace": str(traces / "shared-memory-over-48k.json")}),
        ],
        "command.run": [
            (no_torch, {"argv": ["echo", "hi"]}),
            (env_for(tmp_path, allow_commands=True), {"argv": ["sh", "-c", "echo out; exit 2"]}),
        ],
        "cupti.env": [(no_torch, {})],
        "profiler.kineto_log": [(no_torch, {}), (env_for(tmp_path, python="/usr/bin/false", workload=failing), {})],
        "profiler.overhead": [
            (no_torch, {}),
            (env_for(tmp_path, python="/usr/bin/false", workload=failing), {}),
            (env_for(tmp_path, workload=failing), {"runs": 0}),
        ],
        "ranks.baseline": [
            (no_torch, {"paths": str(traces / "rank-skew"), "baseline": str(traces / "rank-skew-baseline")}),
            (no_torch, {"paths": str(traces / "grid-overflow.json")}),
        ],
        "profile.compare": [  # nothing to compare; the same launches fixed (disappears); itself (nothing wrong)
            (no_torch, {"trace": str(traces / "grid-overflow.json")}),
            (no_torch, {"trace": str(traces / "grid-overflow.json"), "other": str(traces / "grid-overflow.json")}),
            (no_torch, {"trace": str(traces / "healthy-small.json"), "other": str(traces / "grid-overflow.json")}),
            (no_torch, {"trace": str(traces / "grid-overflow.json"), "other": str(traces / "missing.json")}),
        ],
    }


def test_every_probe_produces_the_facts_it_declares(tmp_path: Path) -> None:
    """A fact the probe produces but does not declare (a misspelling), or of another type than declared,
    would send a playbook down a default branch: every probe, every path that runs here."""
    from wizard.probes.base import fact_problems, fact_warnings

    runs = _runs_here(tmp_path)
    assert set(runs) == set(builtin_probes())
    for name, probe in builtin_probes().items():
        for env, params in runs[name]:
            result = probe.run(env, params, timeout=60)
            assert result.facts, (name, params)
            assert fact_problems(probe.facts, result.facts) == [], (name, params)
            assert fact_warnings(name, probe.facts, result.status.value, result.facts) == [], (name, params)


def test_every_probe_declares_its_contract() -> None:
    for name, probe in builtin_probes().items():
        assert probe.name == name and probe.summary and probe.facts
        assert len({p.name for p in probe.params}) == len(probe.params)


@pytest.fixture(scope="session")
def real_gpu() -> None:
    """Skips unless torch sees a CUDA device: asked once, and only when a test needs it (a torch
    process takes seconds to start)."""
    if not HAVE_TORCH:
        pytest.skip("torch is not installed in this interpreter")
    if not Path("/dev/nvidiactl").exists():
        pytest.skip("no NVIDIA driver here (/dev/nvidiactl is absent); scripts/gpu-check.sh runs this on GPU machines")
    probe = SubprocessRunner().run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], timeout=120
    )
    if not probe.output.strip().endswith("True"):
        pytest.skip(
            "no NVIDIA GPU visible here (torch.cuda.is_available() is False in a subprocess); this path "
            "runs on GPU machines, and scripts/gpu-check.sh runs all probes there"
        )


@pytest.mark.gpu
@pytest.mark.usefixtures("real_gpu")
def test_big_grid_shows_mechanism_a_on_a_real_gpu(tmp_path: Path) -> None:
    env = env_for(tmp_path, workload=Workload.parse(f"python {EXAMPLES / 'workloads' / 'big_grid.py'}", sys.executable))
    result = ReprofileProbe().run(env, {}, timeout=300)
    assert result.facts["cuda_available"] and "A" in result.facts["mechanisms"]
    group = next(g for g in inspect_paths([result.facts["trace"]]).reports[0].metrics.groups if g.mechanism == "A")
    assert group.op is not None and group.op.user_frame == "_kernels.py(35): launch"  # a driver-API launch: no op
    assert result.facts["follows"] == "profiler"


class RecordedRunner:
    """A runner double that plays back a recorded tool output into the --log-file it was given."""

    def __init__(self, recorded: str) -> None:
        self.recorded = recorded
        self.argv: list[str] = []

    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> Any:
        from wizard.runner import CommandResult

        self.argv = list(argv)
        log = Path(self.argv[self.argv.index("--log-file") + 1])
        log.write_text(self.recorded)
        return CommandResult(self.argv, 0, "", 0.1, False)


def test_ncu_path_with_recorded_output(tmp_path: Path) -> None:
    from wizard.probes.reprofile import _ncu

    runner = RecordedRunner((OUTPUTS / "ncu-raw.csv").read_text())
    env = env_for(tmp_path, runner=runner, which=lambda tool: f"/opt/nvidia/{tool}")
    rows, status = _ncu(env, ["big_grid.py"], tmp_path, 60, "void big_grid_kernel<float>(int*)")
    assert status == "ok" and rows[0]["launch__grid_size"] == 4294967294
    assert runner.argv[:5] == ["/opt/nvidia/ncu", "--target-processes", "all", "-k", "regex:big_grid_kernel"]
    denied = env_for(
        tmp_path,
        runner=RecordedRunner((OUTPUTS / "ncu-noperm.txt").read_text()),
        which=lambda tool: f"/opt/nvidia/{tool}",
    )
    rows, status = _ncu(denied, ["big_grid.py"], tmp_path, 60, "big_grid_kernel")
    assert rows == [] and "NVreg_RestrictProfilingToAdminUsers=0" in status
    missing = env_for(tmp_path, which=lambda tool: None)
    assert _ncu(missing, ["x.py"], tmp_path, 60, "k") == ([], "ncu not installed")
