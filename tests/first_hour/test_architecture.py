"""docs/architecture.md's rules, checked over the source: who may import whom, and which modules
alone may print, exit, talk to a terminal or write files."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "wizard"
# Code that runs in another process, never imported by the package: the harness in the engineer's interpreter
# (with torch); Nsight Compute's report reader, a program of its own so that NVIDIA's closed library crashes alone
# (it prints its one error line and exits with its code, as a CLI does).
STANDALONE = {"wizard/probes/harness.py", "wizard/ncu/worker.py"}

# layer -> layers it must not import (the rules of docs/architecture.md, checked against its tables)
FORBIDDEN: dict[str, set[str]] = {
    "cli": {"engine", "playbook", "probes", "trace", "testing"},  # the CLI calls the library, ui and report
    "engine": {"cli", "ui", "report"},
    "playbook": {"cli", "ui", "report", "engine"},
    "trace": {"cli", "ui", "report", "engine", "playbook", "probes"},
    "probes": {"cli", "ui", "report", "engine"},
    "report": {"cli", "ui"},
    "ui": {"cli"},
    "testing": {"cli", "ui", "report", "engine", "probes"},
    "api": {"cli", "ui", "report", "engine", "playbook", "probes"},  # traces only: trace inspect's start-up
    "diff": {"cli", "ui", "report", "engine", "playbook", "probes"},  # two profiles: traces and reports only
    "ncu": {"cli", "ui", "report", "engine", "playbook", "probes", "testing"},  # Nsight Compute beside a trace
    "runs": {"cli", "ui", "report"},
    "profiler": {"cli", "ui", "report", "engine", "playbook", "probes"},
    "cluster": {"cli", "ui", "report", "engine", "playbook", "probes", "trace"},
    "jobs": {"cli", "ui", "report", "engine", "playbook", "probes", "testing"},  # a job from per-rank summaries
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel not in STANDALONE:
            yield rel, ast.parse(path.read_text(encoding="utf-8"))


def _layer(rel: str) -> str:
    parts = Path(rel).parts
    return parts[1] if len(parts) > 2 else Path(rel).stem


def _type_checking(tree: ast.Module) -> set[int]:
    """The nodes inside ``if TYPE_CHECKING:`` blocks: imports type checkers read and Python never runs."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


DYNAMIC = ("importlib.import_module", "import_module", "__import__")


def _imports(tree: ast.Module, *, run_time: bool = False) -> Iterator[tuple[int, str]]:
    """Every module imported anywhere in the file, function-level imports and ``importlib``/``__import__``
    calls with a literal name included; ``run_time``: leave out what only type checkers read."""
    skip = _type_checking(tree) if run_time else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in DYNAMIC and node.args:
            first = node.args[0]
            yield (
                node.lineno,
                first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "<computed>",
            )


def _calls(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Dotted names of everything called: ``print``, ``sys.exit``, ``Path.write_text`` as ``x.write_text``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                yield node.lineno, func.id
            elif isinstance(func, ast.Attribute):
                base = func.value.id if isinstance(func.value, ast.Name) else "x"
                yield node.lineno, f"{base}.{func.attr}"


MODULES = dict(_modules())


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_import_only_downwards(layer: str) -> None:
    """The CLI may name the library's types for its type checker (``if TYPE_CHECKING:``), never load them."""
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel, tree in MODULES.items()
        if _layer(rel) == layer
        for line, name in _imports(tree, run_time=layer == "cli")
        if name.startswith("wizard.") and name.split(".")[1] in FORBIDDEN[layer]
    ]
    assert bad == []


# The trace layer's rooms (docs/architecture.md, "The trace layer"): room -> rooms it must not import. The
# reader knows no check; the pass contract (trace/passes.py) knows only what was read, so every room may declare
# a pass with it; the flagship's metric checks know only what was read; the health check may read the
# flagship's result; the inspection runs them all; the fixer rewrites what was read and never inspects.
TRACE_ROOMS: dict[str, set[str]] = {
    "read": {"metrics", "health", "profile", "inspection", "fix", "passes"},
    "passes": {"metrics", "health", "profile", "inspection", "fix"},
    "metrics": {"health", "profile", "inspection", "fix"},
    "health": {"profile", "inspection", "fix"},
    "profile": {"inspection", "fix"},
    "fix": {"inspection"},
}


def _room(rel: str) -> str | None:
    parts = Path(rel).parts
    if parts[:2] != ("wizard", "trace") or len(parts) < 3:
        return None
    return parts[2] if len(parts) > 3 else Path(parts[2]).stem


@pytest.mark.parametrize("room", sorted(TRACE_ROOMS))
def test_trace_rooms_import_only_downwards(room: str) -> None:
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel, tree in MODULES.items()
        if _room(rel) == room
        for line, name in _imports(tree)
        if name.startswith("wizard.trace.") and name.split(".")[2] in TRACE_ROOMS[room]
    ]
    assert bad == []


def _module_name(rel: str) -> str:
    name = rel.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


# Where importlib may load code by a name computed at run time: the package's face loads each public
# name on first use (its table, read below as imports); plugins are installed packages' entry points; the CLI's
# loader of a command's module (wizard/cli/table.py), whose tables' rows are read below as imports of the module
# that holds each table (``Command("wizard.cli.commands.run", ...)``). The health checks' registry imports its
# checks by name (tests/health/test_check_declarations.py holds that list to the package's files).
COMMAND_LOADER = "wizard/cli/table.py"
DYNAMIC_IMPORTS = {"wizard/__init__.py", "wizard/plugins.py", COMMAND_LOADER}


def test_no_module_imports_by_a_name_the_test_cannot_read() -> None:
    bad = [
        f"{rel}:{line}: {name}"
        for rel, tree in MODULES.items()
        if rel not in DYNAMIC_IMPORTS
        for line, name in _imports(tree)
        if name == "<computed>" or name.split(".")[0] == "importlib"
    ]
    assert bad == []


def _import_graph() -> dict[str, set[str]]:
    """wizard module -> the wizard modules it imports when it runs (function-level imports included)."""
    names = {_module_name(rel): rel for rel in MODULES}
    graph: dict[str, set[str]] = {}
    for name, rel in names.items():
        tree = MODULES[rel]
        found = set()
        for node in ast.walk(tree):  # `from wizard.x import y`: y may be a module of its own
            if isinstance(node, ast.ImportFrom) and node.module and id(node) not in _type_checking(tree):
                found |= {f"{node.module}.{a.name}" for a in node.names} & names.keys()
        found |= {imported for _, imported in _imports(tree, run_time=True) if imported in names}
        graph[name] = found - {name, "wizard"}  # the package itself runs first whoever imports it
    graph["wizard"] |= {module for module in ast.literal_eval(_lazy_table()) if module in names}
    for name, rel in names.items():
        graph[name] |= _command_rows(MODULES[rel]) & names.keys()
    return graph


def _command_rows(tree: ast.Module) -> set[str]:
    """The modules a table of commands names: the first argument of each ``Command("wizard....", ...)`` row."""
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "Command" and node.args
        if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    }


def _lazy_table() -> str:
    """wizard/__init__.py's ``_MODULES``: the modules its public names load from, on first use."""
    for node in MODULES["wizard/__init__.py"].body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_MODULES" and node.value is not None:
            return ast.unparse(node.value)
    raise AssertionError("wizard/__init__.py has no _MODULES table")


def test_modules_import_from_the_package_itself_only_its_version() -> None:
    """So leaving the package out of the graph below hides no dependency: it defines __version__ first."""
    bad = [
        f"{rel}:{node.lineno}: from wizard import {alias.name}"
        for rel, tree in MODULES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "wizard" and rel != "wizard/__init__.py"
        for alias in node.names
        if alias.name != "__version__" and f"wizard/{alias.name}.py" not in MODULES
    ]
    assert bad == []


def test_no_import_cycle_among_wizard_modules() -> None:
    graph = _import_graph()
    assert {"wizard.api", "wizard.report.registry"} <= graph["wizard"]  # the table and the renderers were read
    assert {"wizard.cli.commands.run", "wizard.cli.commands.trace"} <= graph["wizard.cli.commands"]  # commands' too
    assert "wizard.cli.commands.trace_inspect" in graph["wizard.cli.commands.trace"]  # and trace's actions
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


# The records: what the library returns and the engine keeps. They render only through wizard.rendering.
RECORDS = {"wizard/trace/inspection/results.py", "wizard/engine/transcript.py", "wizard/trace/read/records.py"}


def test_no_record_imports_a_renderer() -> None:
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel in sorted(RECORDS)
        for line, name in _imports(MODULES[rel])
        if name.split(".")[:2] in (["wizard", "report"], ["wizard", "ui"]) or name.split(".")[0] == "importlib"
    ]
    assert bad == []
    renders = {"wizard/trace/inspection/results.py", "wizard/engine/transcript.py"}
    assert all("wizard.rendering" in {name for _, name in _imports(MODULES[rel])} for rel in renders)


def test_only_the_ui_uses_rich_or_questionary() -> None:
    allowed = {"ui", "untrusted"}  # untrusted.rich_text builds rich Text for the ui, lazily
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel, tree in MODULES.items()
        for line, name in _imports(tree)
        if name.split(".")[0] in ("rich", "questionary", "prompt_toolkit") and _layer(rel) not in allowed
    ]
    assert bad == []


# The exceptions: the runner's preexec hook ends the forked child (never warpwizard) when its parent died
# before the child could ask to die with it; so does a decoding worker of the process pool (issue 47, item 12).
# wizard/reaper.py is a program of its own between warpwizard and a command (never imported by warpwizard): its exits
# are its process's, its one line of usage its own stderr's.
_CHILD_EXITS = {("wizard/runner.py", "os._exit"), ("wizard/trace/read/parallel.py", "os._exit"),
                ("wizard/reaper.py", "os._exit"), ("wizard/reaper.py", "sys.exit")}  # fmt: skip


def test_the_library_never_prints_and_only_the_cli_exits() -> None:
    bad = [
        f"{rel}:{line}: {name}"
        for rel, tree in MODULES.items()
        for line, name in _calls(tree)
        if name == "print"
        or (name in ("sys.exit", "os._exit", "exit") and rel != "wizard/cli/app.py" and (rel, name) not in _CHILD_EXITS)
    ]
    assert bad == []


def test_every_file_is_written_through_outputs() -> None:
    """Temporary file, then rename; never onto an input: one module does it (docs/security.md)."""
    writers = {"x.write_text", "x.write_bytes", "os.replace", "os.rename", "shutil.move", "shutil.copyfile"}
    bad = [
        f"{rel}:{line}: {name}"
        for rel, tree in MODULES.items()
        for line, name in _calls(tree)
        if name in writers and rel != "wizard/outputs.py"
    ]
    opened = [
        f"{rel}:{node.lineno}: open(..., {mode!r})"
        for rel, tree in MODULES.items()
        if rel != "wizard/outputs.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
        for mode in [_open_mode(node)]
        if mode is not None and any(c in mode for c in "wax+")
    ]
    assert bad + opened == []


def _open_mode(call: ast.Call) -> str | None:
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    if name not in ("open", "fdopen"):
        return None
    args = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return next((a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "r")


def test_the_outside_world_comes_from_the_system() -> None:
    """Streams and terminals are the injected System's; environment variables too, except where a
    library function's ``environ=None`` means this process's own (the CLI always passes its System's),
    and ProbeSettings built without a workspace (tests, library callers) take this process's default one.
    compiled_core.py reads WARPWIZARD_PURE when the readers and the JSON writer load, before any System exists: which
    code runs (compiled or its Python twin, the same results), as PYTHONHASHSEED is read, not anything a command
    reads."""
    defaults = {"wizard/playbook/discovery.py", "wizard/engine/answers.py", "wizard/environment.py",
                "wizard/compiled_core.py"}  # fmt: skip
    bad = []
    for rel, tree in MODULES.items():
        if rel in {"wizard/system.py", "wizard/cli/app.py", "wizard/reaper.py"} | defaults:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                name = f"{node.value.id}.{node.attr}"
                if name in ("os.environ", "os.getenv", "sys.stdin", "sys.stdout", "sys.stderr"):
                    bad.append(f"{rel}:{node.lineno}: {name}")
    assert bad == []


def test_torch_is_imported_only_inside_the_profiler_hooks() -> None:
    """warpwizard runs torch in the engineer's interpreter; only wizard.profiler's functions,
    called from inside a torch.profiler run, import it (to call PyTorch's own handler)."""
    found = []
    for rel, tree in MODULES.items():
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "torch" for n in names):
                found.append((rel, id(node) in top))
    assert found == [("wizard/profiler.py", False)]


LAYERS = {"cli", "ui", "report", "engine", "playbook", "probes", "trace", "testing"}


def _doc_rules() -> dict[str, set[str]]:
    """docs/architecture.md's tables: the 'may not import' column of each wizard/ folder or module."""
    rules: dict[str, set[str]] = {}
    for line in (REPO / "docs" / "architecture.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`wizard/([a-z_]+)(?:/|\.py)`", cells[0]) if len(cells) >= 3 else None
        if match and match.group(1) != "__init__":
            rules[match.group(1)] = set(re.findall(r"`([a-z_]+)`", cells[2]))
    return rules


def test_the_rule_table_is_the_documents() -> None:
    assert _doc_rules() == FORBIDDEN


def test_only_the_runner_starts_programs() -> None:
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel, tree in MODULES.items()
        for line, name in _imports(tree)
        if name.split(".")[0] == "subprocess" and rel != "wizard/runner.py"
    ]
    assert bad == []


# Where JSON must be another program's format, not a warpwizard document (docs/architecture.md).
JSON_DUMPS_ELSEWHERE = {
    "wizard/trace/fix.py",  # the fixer writes events in the profiler's own spelling
    "wizard/probes/op_isolate.py",  # the repro's data literal (ASCII-only JSON inside repr())
    "wizard/playbook/schema.py",  # the committed schema file, indented for editors and diffs
    "wizard/testing/traces.py",  # the trace builder writes traces as Kineto does
    "wizard/testing/pftrace.py",  # a converter's legacy_json_value, as the converter writes it
    "wizard/testing/hostile.py",  # kernel events of hostile traces, as Kineto writes them
}


def test_json_documents_are_written_by_serialize_only() -> None:
    bad = [
        f"{rel}:{line}: {name}"
        for rel, tree in MODULES.items()
        for line, name in _calls(tree)
        if name in ("json.dumps", "json.dump") and rel != "wizard/serialize.py" and rel not in JSON_DUMPS_ELSEWHERE
    ]
    assert bad == []


def test_foundation_modules_import_no_layer() -> None:
    foundation = [
        rel for rel in MODULES if rel.count("/") == 1 and Path(rel).stem not in {*FORBIDDEN, "__init__", "__main__"}
    ]
    assert "wizard/outputs.py" in foundation and "wizard/workspace.py" in foundation
    bad = [
        f"{rel}:{line}: imports {name}"
        for rel in foundation
        for line, name in _imports(MODULES[rel])
        if name.startswith("wizard.") and name.split(".")[1] in LAYERS
    ]
    assert bad == []


def test_helper_threads_start_through_threads_start() -> None:
    """A helper thread that does not block SIGINT can take Ctrl-C from the main thread (wizard/threads.py)."""
    bad = []
    for rel, tree in MODULES.items():
        made = {
            ast.unparse(target)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) in ("threading.Thread", "threading.Timer")
            for target in node.targets
        }
        bad += [
            f"{rel}:{node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "start"
            and ast.unparse(node.func.value) in made
        ]
    assert bad == []
