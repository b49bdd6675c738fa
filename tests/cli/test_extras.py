"""A missing optional dependency: its own exit code, and an install command that works where warpwizard came
from (issue 44 item 3: ``pip install 'warpwizard[html]'`` fails in a clone, and exit 2 said "usage error")."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import wizard
from tests.conftest import EXAMPLES, run_inprocess
from wizard.exit_status import MEANING, ExitStatus
from wizard.extras import Origin, _recorded, install_command, origin, pip_command

CHECKOUT = Path(wizard.__file__).resolve().parent.parent  # this suite runs from a clone


def test_a_clone_is_told_its_own_directory(tmp_path: Path) -> None:
    clone = tmp_path / "src" / "warpwizard"
    assert install_command("html", cwd=clone, where=Origin(clone, editable=False, known=True), pip="pip") == (
        "pip install '.[html]' (from this clone)"
    )
    assert install_command("html", cwd=tmp_path, where=Origin(clone, editable=True, known=True), pip="pip") == (
        "pip install -e 'src/warpwizard[html]' (from this clone)"
    )
    far = Path("/") / "opt" / "a" / "b" / "c" / "d" / "warpwizard"
    assert install_command(
        "html", cwd=tmp_path / "x" / "y", where=Origin(far, editable=False, known=True), pip="pip"
    ) == (
        f"pip install '{far}[html]' (from this clone)"  # the relative path is longer: the absolute one
    )


def test_pip_is_this_interpreter_s_unless_the_pip_on_path_is(tmp_path: Path) -> None:
    """A newcomer runs .venv/bin/warpwizard without activating the environment: plain ``pip`` would install the
    extra into whatever Python PATH finds first. Only where PATH's pip is this interpreter's is ``pip`` enough."""
    venv = tmp_path / "my env" / "bin"
    venv.mkdir(parents=True)
    (venv / "pip").touch()
    python = str(venv / "python")
    assert pip_command(python, which=lambda _: str(venv / "pip")) == "pip"
    assert pip_command(python, which=lambda _: "/usr/bin/pip") == f"'{python}' -m pip"
    assert pip_command(python, which=lambda _: None) == f"'{python}' -m pip"
    assert (
        install_command(
            "html", where=Origin(None, editable=False, known=True), pip=pip_command(python, which=lambda _: None)
        )
        == f"'{python}' -m pip install 'warpwizard[html]'"
    )


def test_an_install_from_the_index_is_told_the_index_and_an_unknown_one_both() -> None:
    assert install_command("html", where=Origin(None, editable=False, known=True), pip="pip") == (
        "pip install 'warpwizard[html]'"
    )
    assert install_command("html", where=Origin(None, editable=False, known=False), pip="pip") == (
        "pip install 'warpwizard[html]' (installed from PyPI) or pip install '.[html]' (in a clone)"
    )


def test_the_package_beside_a_pyproject_is_a_clone(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "warpwizard"\nversion = "0"\n')
    assert origin(tmp_path / "wizard") == Origin(tmp_path, editable=False, known=True)
    assert origin(CHECKOUT / "wizard").directory == CHECKOUT


def test_pips_record_names_the_directory_it_installed_from(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "warpwizard"\n')
    # PEP 610's direct_url.json, as pip writes it for `pip install -e DIR` and `pip install DIR`
    editable = json.dumps({"url": tmp_path.as_uri(), "dir_info": {"editable": True}})
    assert _recorded(editable) == Origin(tmp_path, editable=True, known=True)
    assert _recorded(json.dumps({"url": tmp_path.as_uri(), "dir_info": {}})) == Origin(
        tmp_path, editable=False, known=True
    )
    assert _recorded(None) is None  # from the index: pip writes no direct_url.json
    vcs = json.dumps({"url": "https://github.com/x/warpwizard.git", "vcs_info": {"vcs": "git"}})
    assert _recorded(vcs) == Origin(None, editable=False, known=False)
    assert _recorded("{not json") == Origin(None, editable=False, known=False)


def _installed_editable_here() -> bool:
    """pip's own record of how this interpreter's warpwizard was installed (PEP 610 direct_url.json), read here
    apart from wizard/extras.py: editable, and from this checkout."""
    from importlib.metadata import distribution
    from urllib.parse import unquote, urlparse

    text = distribution("warpwizard").read_text("direct_url.json")
    record = json.loads(text) if text else {}
    where = Path(unquote(urlparse(str(record.get("url", ""))).path))
    same = where.exists() and where.resolve() == Path(CHECKOUT).resolve()
    return bool(record.get("dir_info", {}).get("editable")) and same


def test_without_plotly_the_cli_exits_with_its_own_code_and_names_this_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # import fails as if not installed
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "x.html"
    result = run_inprocess("trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json"), "--report", str(out))
    assert result.status == 9
    assert ExitStatus(9) is ExitStatus.MISSING_DEPENDENCY
    relative = os.path.relpath(CHECKOUT, tmp_path)
    spelled = relative if len(relative) < len(str(CHECKOUT)) else str(CHECKOUT)
    editable = "-e " if _installed_editable_here() else ""  # scripts/test installs this clone with pip install -e
    command = f"{pip_command()} install {editable}'{spelled}[html]' (from this clone)"  # pip: the test above
    assert result.stderr == f"warpwizard: error: the HTML report needs plotly: {command}\n"
    assert not out.exists()
    assert "optional dependency" in MEANING[ExitStatus.MISSING_DEPENDENCY]
