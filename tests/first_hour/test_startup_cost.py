"""What ``trace inspect --json`` on a small trace pays for as it starts, besides numpy (issue 48's start-up, third
round): read from the real entry point's own process.

- **Generated methods.** ``dataclasses`` writes each ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and a
  frozen class's ``__setattr__`` / ``__delattr__`` as source text and compiles it when the class is declared
  (CPython 3.11 ``Lib/dataclasses.py``, ``_create_fn``: one ``exec`` per method): about 0.55 M instructions each, 313 of
  them in this process before this round. A class whose instances nothing compares or shows is declared with
  ``eq=False, repr=False``; the classes listed in ``COMPARED_OR_SHOWN`` keep theirs, each for the reason given.
  The methods compiled are counted twice: by the interpreter's ``compile`` audit event as the process runs, and
  from each class's declaration (``__dataclass_params__``).
- **Modules.** ``secrets`` (with random, hmac, base64) is loaded where an output file is written
  (``wizard/outputs.py``), not for ``--json`` on stdout.
- **Exit.** The console script freezes the objects still alive before it exits (``gc.freeze``), so the interpreter's
  last collections do not walk numpy's and every module's objects; a library caller's process is left as it is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import demo_trace, recorded_run

# The dataclasses of a small inspection that keep their generated __eq__ and __repr__, and why. Every other one a
# small inspection declares is lean (a new one fails the first test until it is declared so or listed here).
COMPARED_OR_SHOWN = {
    # the library's options (docs/api.md): a caller may print or compare them (its results are Structs compared by
    # value, which write no source: tests/first_hour/test_startup_records.py, VALUES)
    "wizard.inspect_options.InspectOptions": "the library's options",
}

# the hooks only: tests/helpers.recorded_run starts the process around them
RUNNER = """
import dataclasses

def _audit(event, args):
    if event != "compile":
        return
    frame = sys._getframe(1)
    if frame.f_code.co_name != "_create_fn":
        return
    method = frame.f_locals["name"]
    while frame is not None and frame.f_code.co_name != "_process_class":
        frame = frame.f_back
    if frame is not None:
        cls = frame.f_locals["cls"]
        compiled[f"{cls.__module__}.{cls.__qualname__} {method}"] += 1

def _declared():
    found = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("wizard."):
            for value in vars(module).values():
                if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == name:
                    params = value.__dataclass_params__
                    found[f"{name}.{value.__qualname__}"] = [params.init, params.repr, params.eq, params.frozen,
                                                             params.unsafe_hash, params.order]
    return found

def _write():
    wizard = {k: n for k, n in compiled.items() if k.startswith("wizard.")}
    json.dump({"compiled": wizard, "declared": _declared(), "modules": sorted(sys.modules),
               "frozen": gc.get_freeze_count()}, open(out, "w"))
"""


# CPython 3.11 and 3.12 write each method with its own exec (_create_fn); 3.13 writes a class's methods in one
audited_per_method = pytest.mark.skipif(not hasattr(dataclasses, "_create_fn"), reason="dataclasses' own layout")


def _run(tmp_path: Path, *args: str, library: bool = False) -> dict[str, Any]:
    """The real entry point (or the library's inspect_traces) on ``args``, and what its process recorded."""
    return recorded_run(tmp_path, RUNNER, *args, library=library)


def _expected_methods(init: bool, repr_: bool, eq: bool, frozen: bool, unsafe_hash: bool, order: bool) -> list[str]:
    """The methods a declaration makes dataclasses write (Lib/dataclasses.py, _process_class: __hash__ by the
    table ``_hash_action`` for a class that defines none, where eq and frozen make one, or unsafe_hash does)."""
    names = ["__init__"] * init + ["__repr__"] * repr_ + ["__eq__"] * eq
    names += ["__lt__", "__le__", "__gt__", "__ge__"] * order
    names += ["__setattr__", "__delattr__"] * frozen
    names += ["__hash__"] * (unsafe_hash or (eq and frozen))
    return names


@pytest.fixture(scope="module")
def inspection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("startup-cost")
    return _run(tmp_path, "trace", "inspect", "--json", "--fail-on", "never", str(demo_trace(tmp_path / "small.json")))


def test_only_the_compared_or_shown_classes_declare_eq_and_repr(inspection: dict[str, Any]) -> None:
    declared = {name for name, params in inspection["declared"].items() if params[1] or params[2]}
    # the inspection's dataclasses were all seen (72 on 2026-12-02; 37 once the internal records became msgspec
    # Structs, which write no source, 3 once the results, the devices' limits and TracePass did and wizard.cluster's
    # Rank was no longer loaded: tests/first_hour/test_startup_records.py, test_startup_lazy.py)
    assert len(inspection["declared"]) == 3
    assert declared == set(COMPARED_OR_SHOWN)


@audited_per_method
def test_the_methods_compiled_are_the_declarations(inspection: dict[str, Any]) -> None:
    """The audit's count of each class's compiled methods is what its declaration says (the second computation):
    215 methods on 2026-12-02, where the same classes compiled 313 before this round; no lean class wrote an
    __eq__ or a __repr__."""
    from_declarations: dict[str, int] = {}
    for name, params in inspection["declared"].items():
        for method in _expected_methods(*params):
            key = f"{name} {method}"
            from_declarations[key] = from_declarations.get(key, 0) + 1
    assert inspection["compiled"] == from_declarations
    written = {key.split(" ")[0] for key in inspection["compiled"] if key.split(" ")[1] in ("__eq__", "__repr__")}
    assert written == set(COMPARED_OR_SHOWN)


def test_secrets_is_not_loaded_for_json_on_stdout(inspection: dict[str, Any], tmp_path: Path) -> None:
    loaded = set(inspection["modules"])
    assert {"wizard.outputs", "wizard.trace.health.checks"} <= loaded  # the process's own list
    assert loaded.isdisjoint({"secrets", "random", "hmac", "base64"})
    # the check can fail: a Markdown report written to a file loads secrets (its temporary file's name)
    written = _run(tmp_path, "trace", "inspect", "--markdown", str(tmp_path / "report.md"), "--fail-on", "never",
                   str(demo_trace(tmp_path / "small.json")))  # fmt: skip
    assert (tmp_path / "report.md").is_file()
    assert "secrets" in written["modules"]


def test_the_console_script_freezes_before_it_exits_and_a_library_caller_does_not(
    inspection: dict[str, Any], tmp_path: Path
) -> None:
    assert inspection["frozen"] > 10_000  # every gc-tracked object then: numpy's and the modules' (28,000)
    assert _run(tmp_path, str(demo_trace(tmp_path / "small.json")), library=True)["frozen"] == 0
