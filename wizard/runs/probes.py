"""One probe, run alone (``warpwizard probe``): the registered probes, a command line's ``KEY=VALUE`` parameters
typed, and the one-entry transcript ``warpwizard compare`` merges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from wizard.engine.engine import run_probe as _run_probe
from wizard.engine.transcript import Transcript, TranscriptEntry
from wizard.environment import Environment
from wizard.errors import UsageError
from wizard.formatting import verb
from wizard.options import Options
from wizard.playbook.model import yes_no
from wizard.probes.base import PARAM_TYPES, ParamSpec, ProbeInfo, with_defaults
from wizard.probes.registry import catalog, registered_probes
from wizard.system import System


def list_probes() -> dict[str, ProbeInfo]:
    """Every registered probe's declaration: summary, parameters, facts, what it runs."""
    return catalog()


def probe_params(name: str, pairs: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` texts (a command line's ``--param``) as the typed parameters of probe ``name``;
    a key given twice builds a list where the parameter takes one. Raises UsageError naming the probe's
    parameters and the type expected."""
    spec = _probe_info(name)
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {pair!r}: expected KEY=VALUE")
        param = _param(spec, key)
        value = _coerce(param, text, name)
        if key in out and param.type in ("list[str]", "paths"):
            previous = out[key] if isinstance(out[key], list) else [out[key]]
            out[key] = [*previous, *(value if isinstance(value, list) else [value])]
        elif key in out:
            raise UsageError(f"--param {key}: given twice; probe {name} takes one {param.type}")
        else:
            out[key] = value
    return out


def run_probe(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    options: Options | None = None,
    timeout: float = 600.0,
    system: System | None = None,
) -> Transcript:
    """Run one registered probe, as a one-entry transcript that ``warpwizard compare`` merges with
    other machines' (the host's GPUs, as CUDA_VISIBLE_DEVICES narrows them, and driver from NVML).

    ``params`` are yours (like a command line): a probe's own opt-ins still apply (``command.run``
    needs ``allow_commands``). Raises UsageError for an unknown probe or parameter, or a value of the
    wrong type; a probe that ran and failed is the entry's status, not an exception."""
    from wizard.cluster import launcher_place
    from wizard.probes.env import visible_gpus

    full = _checked_params(_probe_info(name), params)
    system = system or System()
    env = Environment(system, (options or Options()).settings(system))
    clock = env.system.clock
    transcript = Transcript.begin(
        {"id": f"probe:{name}", "title": f"warpwizard probe {name}", "version": "1"}, clock.now()
    )
    started = clock.monotonic()
    entry = TranscriptEntry(
        node=name, kind="probe", step=None, started=clock.now().isoformat(), duration_s=0.0, probe=name
    )
    result = _run_probe(registered_probes()[name], full, env, timeout)
    entry.inputs = full
    entry.record(result)
    entry.duration_s = round(clock.monotonic() - started, 6)
    transcript.entries.append(entry)
    gpus, driver = visible_gpus(env)
    transcript.host.update(gpus=gpus, driver=driver, **launcher_place(env.system.environ))
    transcript.finish(clock.now(), {})
    return transcript


def _checked_params(spec: ProbeInfo, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The caller's parameters, each of its declared type and the required ones there, with the defaults."""
    name = spec.name
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(
            f"probe {name}: params must be a mapping of parameter name to value, not {type(params).__name__}"
        )
    given = dict(params or {})
    for key, value in given.items():
        param = _param(spec, key)
        if not PARAM_TYPES[param.type](value):
            raise UsageError(f"probe {name}: parameter {key} takes a {param.type}, not {type(value).__name__}")
    missing = [p.name for p in spec.params if p.required and p.name not in given]
    if missing:
        noun = verb(len(missing), "parameter", "parameters")
        raise UsageError(f"probe {name}: missing required {noun}: {', '.join(missing)}")
    return with_defaults(spec.params, given)


def _probe_info(name: str) -> ProbeInfo:
    known = catalog()
    if name not in known:
        raise UsageError(f"unknown probe {name!r}; registered: {', '.join(sorted(known))}")
    return known[name]


def _param(spec: ProbeInfo, key: str) -> ParamSpec:
    param = spec.param(key)
    if param is None:
        names = ", ".join(p.name for p in spec.params) or "none"
        raise UsageError(f"probe {spec.name} has no parameter {key!r}; its parameters: {names}")
    return param


def _coerce(param: ParamSpec, text: str, probe: str) -> Any:
    """A command line's text as the parameter's type."""
    kind = param.type
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            flag = yes_no(text)
            if flag is None:
                raise ValueError(text)
            return flag
    except ValueError:
        raise UsageError(f"--param {param.name}={text!r}: probe {probe} expects a {kind}") from None
    if kind == "list[str]":
        return [text]
    return text
