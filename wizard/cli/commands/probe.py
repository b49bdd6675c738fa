"""``warpwizard probe NAME``: one probe, e.g. on every node of a cluster (``compare`` merges the reports)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.arguments import Sub, add_probe_options, add_progress
from wizard.cli.context import Context, probe_options_of
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus
from wizard.schemas import TRANSCRIPT

if TYPE_CHECKING:
    from wizard.engine.transcript import Transcript

COMPLETES = {"name": "probes"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    probe: argparse.ArgumentParser = sub.add_parser("probe", **kw)
    probe.add_argument("name", help="a registered probe, e.g. trace.inspect, profiler.reprofile, op.isolate")
    probe.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="one of its parameters")
    probe.add_argument("--json", action="store_true", help=f"print the report (schema {TRANSCRIPT})")
    probe.add_argument(
        "--output",
        metavar="FILE",
        help="write the JSON report there; {host}, {rank} and {local_rank} are filled in from the launcher "
        "(SLURM, torchrun, Open MPI)",
    )
    probe.add_argument("--force", action="store_true", help="replace an --output file that exists")
    probe.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="for each program it starts")
    probe.add_argument(
        "--device-from-rank",
        action="store_true",
        help="run on the GPU of this process's local rank (CUDA_VISIBLE_DEVICES=LOCAL_RANK): one report per GPU",
    )
    add_probe_options(probe)
    add_progress(probe)
    return probe


def run(ctx: Context) -> ExitStatus:
    from wizard.cluster import device_for_rank, launcher_rank
    from wizard.runs import probe_params, run_inputs, run_probe

    args = ctx.args
    if args.timeout <= 0:
        raise UsageError(f"warpwizard probe: --timeout must be a positive number of seconds, not {args.timeout:g}")
    params = probe_params(args.name, args.param)
    options = probe_options_of(ctx)
    system = ctx.system
    rank = launcher_rank(system.environ)
    if args.device_from_rank:
        device = device_for_rank(system.environ, rank.local_rank)
        system = system.replace(environ={**system.environ, "CUDA_VISIBLE_DEVICES": device})
    target = args.output  # its {host}/{rank}/... were filled in with every output path (app._place_outputs)
    inputs = run_inputs(options, params.values())
    if target is not None:
        from wizard.outputs import check_output, make_parent

        make_parent(target, what="probe report")  # 'reports/{host}-{rank}.json' on every rank, no mkdir first
        check_output(target, inputs=inputs, force=args.force, what="probe report")
    from wizard.progress import task

    with task(system.progress, args.name, doing="running"):
        transcript = run_probe(args.name, params, options=options, timeout=args.timeout, system=system)
    _show_probe(ctx, transcript, target, inputs)
    status = transcript.entries[0].status
    return {"fail": ExitStatus.FINDINGS, "error": ExitStatus.PROBE_FAILURE}.get(status or "", ExitStatus.OK)


def _show_probe(ctx: Context, transcript: Transcript, target: str | None, inputs: list[str]) -> None:
    from wizard.serialize import dumps

    document = dumps(transcript.to_dict()) + "\n"
    if ctx.args.json:  # first: a report the file cannot hold (taken meanwhile, disk full) is not lost
        ctx.write(document)
        ctx.stdout.flush()
    if target is not None:
        from wizard.outputs import write_text

        write_text(target, document, inputs=inputs, force=ctx.args.force, what="probe report")
    if ctx.args.json:
        return
    from wizard.ui.render import probe_result_lines

    for line in probe_result_lines(transcript.entries[0], target):
        ctx.say(line)
