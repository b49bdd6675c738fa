"""The suite's layout holds (issue 46): tests in folders by room, shared helpers in one module
(tests/helpers.py) and fixtures in tests/conftest.py, no test module importing another.

A test module that imports another runs the other's module-level code (its skips, its fixtures) where nobody
reads it, and a rename or a move of one breaks the other; what two modules share belongs in tests/helpers.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

TESTS = REPO / "tests"


def suite_modules() -> list[Path]:
    """Every test module pytest collects under tests/ (its name: test_*.py), found by walking, not listed."""
    return sorted(p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts)


def imported_modules(source: str, module: str) -> set[str]:
    """Every module name ``source`` (the module named ``module``) imports, anywhere in it (a function's body
    too), with relative imports resolved and ``from PACKAGE import NAME`` giving ``PACKAGE.NAME`` as well."""
    package = module.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def is_test_module(name: str) -> bool:
    """A module of this suite that pytest collects: tests.test_x or tests.ROOM.test_x."""
    parts = name.split(".")
    return parts[0] == "tests" and parts[-1].startswith("test_")


def cross_imports(modules: dict[str, str]) -> list[str]:
    """'IMPORTER imports IMPORTED' for each test module (name -> source) that imports another test module."""
    found = []
    for name, source in sorted(modules.items()):
        for imported in sorted(imported_modules(source, name)):
            if is_test_module(imported) and imported != name:
                found.append(f"{name} imports {imported}")
    return found


def test_no_test_module_imports_another_test_module() -> None:
    modules = {module_name(p): p.read_text(encoding="utf-8") for p in suite_modules()}
    assert len(modules) > 80  # the walk found the suite (85 modules when the rooms were made)
    assert cross_imports(modules) == [], "move what they share into tests/helpers.py"


def test_the_guard_names_each_pair_whatever_the_import_is_written_as() -> None:
    """The guard above on modules written for it: each way of writing an import of a test module is caught and
    named, and the helpers, the conftest and the oracles are not test modules."""
    modules = {
        "tests.cli.test_a": "from tests.report.test_b import shared\n",
        "tests.cli.test_c": "def test_x() -> None:\n    from tests.health import test_d\n",
        "tests.cli.test_e": "import tests.test_f as f\n",
        "tests.cli.test_g": "from .test_h import thing\nfrom .. import test_i\n",
        "tests.cli.test_ok": "from tests.helpers import spawn\nfrom tests.conftest import REPO\n"
        "from tests import gate_table\n",
    }
    assert cross_imports(modules) == [
        "tests.cli.test_a imports tests.report.test_b",
        "tests.cli.test_c imports tests.health.test_d",
        "tests.cli.test_e imports tests.test_f",
        "tests.cli.test_g imports tests.cli.test_h",
        "tests.cli.test_g imports tests.test_i",
    ]


def rooms_in_readme() -> list[str]:
    """The rooms tests/README.md's table names (its first column, ``tests/ROOM/``)."""
    text = (TESTS / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `tests/([a-z_]+)/` \|", text, re.M)


def test_every_test_module_is_in_a_room_the_readme_names() -> None:
    """One level of folders, each a package (the module names stay unique: tests.ROOM.test_x) and each in
    tests/README.md's table, which says what goes where; a test module at the top is in no room yet."""
    rooms = rooms_in_readme()
    assert 6 <= len(rooms) <= 12, rooms
    misplaced = [
        str(p.relative_to(REPO))
        for p in suite_modules()
        if len(p.relative_to(TESTS).parts) != 2 or p.parent.name not in rooms or not (p.parent / "__init__.py").exists()
    ]
    assert misplaced == [], f"move each into its room (git mv), as tests/README.md says: {rooms}"
    assert sorted(p.name for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").exists()) == sorted(rooms)
