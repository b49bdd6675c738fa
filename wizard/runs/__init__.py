"""warpwizard as a library, for playbooks and probes: load, validate and run a playbook; run one probe.

The command line's ``run``, ``probe`` and ``validate`` are built on these functions. Nothing here
prints or exits; every error is one of ``wizard.errors``' types (docs/api.md). torch is never
imported: probes run it in the interpreter you name.

One module per job: ``playbooks`` (load, validate, the playbooks a run continues into), ``catalogue`` (found,
checked, drawn, explained; machine facts; completion), ``answers`` (the answers given, each value with its
origin; the answers file and its template), ``sessions`` (saved on interrupt, resumed), ``probes`` (one probe),
``start`` (what a run starts from), ``run`` (the one run), ``plan`` (the dry run), ``files`` (what a run reads
and writes). What a run is asked is ``wizard.run_request.RunRequest``, declared once beside the library.

Trust (docs/security.md): what your code passes (a RunRequest's ``options``: ``workload``, ``python``; a probe's
``params``) is yours, like a command line; answers are answers, as if from a file, so a program an answer names
runs only with ``Options(allow_commands=True)``.
"""

from __future__ import annotations

from wizard.run_request import RunRequest
from wizard.runs.answers import (
    absolute_paths,
    answers_file_template,
    answers_text,
    check_given,
    given_answers,
    scripted_answers,
)
from wizard.runs.catalogue import (
    Checked,
    FoundPlaybook,
    check_playbooks,
    completion_names,
    explain_playbook,
    found_playbooks,
    machine_facts,
    playbook_graph,
    playbook_names,
    playbook_schema,
    shadowed_fragment_notes,
    shadowed_notes,
)
from wizard.runs.files import RunOutputs, run_inputs
from wizard.runs.plan import plan_playbook
from wizard.runs.playbooks import (
    chain_of,
    load_playbook,
    playbook_loader,
    program_questions,
    validate_playbook,
    workload_questions,
)
from wizard.runs.probes import list_probes, probe_params, run_probe
from wizard.runs.run import prepare_run, run_playbook, walk
from wizard.runs.sessions import end_session, latest_session, save_interrupted, save_session, sessions_dir

__all__ = [
    "Checked",
    "FoundPlaybook",
    "RunOutputs",
    "RunRequest",
    "absolute_paths",
    "answers_file_template",
    "answers_text",
    "chain_of",
    "check_given",
    "check_playbooks",
    "completion_names",
    "end_session",
    "explain_playbook",
    "found_playbooks",
    "given_answers",
    "latest_session",
    "list_probes",
    "load_playbook",
    "machine_facts",
    "plan_playbook",
    "playbook_graph",
    "playbook_loader",
    "playbook_names",
    "playbook_schema",
    "prepare_run",
    "probe_params",
    "program_questions",
    "run_inputs",
    "run_playbook",
    "run_probe",
    "save_interrupted",
    "save_session",
    "scripted_answers",
    "sessions_dir",
    "shadowed_fragment_notes",
    "shadowed_notes",
    "validate_playbook",
    "walk",
    "workload_questions",
]
