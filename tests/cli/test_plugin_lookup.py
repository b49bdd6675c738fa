"""The plugin groups' cheap look-up (wizard/plugins.py ``_may_declare``, issue 48): importlib.metadata (its import
and its parse of every installed distribution) runs only where some distribution may declare an entry point of
the group. Each case holds the scan's answer against importlib.metadata's own, the second computation: the scan
may say "maybe" where there is none, never "none" where there is one.

Where importlib.metadata looks, read in CPython 3.11's Lib/importlib/metadata/__init__.py: ``Lookup.__init__``
(children of each path entry ending ``.dist-info`` / ``.egg-info``, or ``egg-info`` inside an ``.egg`` folder),
``FastPath.children`` (``os.listdir``, else a zip's members), ``Distribution.discover`` (every finder on
``sys.meta_path`` with ``find_distributions``).
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import installed
from wizard import plugins

GROUPS = (plugins.PASSES_GROUP, plugins.PROBES_GROUP, plugins.PLAYBOOKS_GROUP)


def _found(group: str) -> list[tuple[str, str]]:
    """What importlib.metadata itself finds for the group (name, value), sorted: the answer to agree with."""
    return sorted((e.name, e.value) for e in metadata.entry_points(group=group))


def _agree(group: str) -> bool:
    """The scan's answer, after checking it never hides an entry point importlib.metadata finds."""
    maybe = plugins._may_declare(group)
    assert maybe or not _found(group), f"the scan says no {group} entry point, importlib.metadata finds some"
    assert [(e.name, e.value) for e in plugins._entries(group)] == _found(group)
    return maybe


def test_this_environment_declares_none_and_the_scan_says_so() -> None:
    """The test environment installs no plugin: every group is answered without importlib.metadata's parse."""
    for group in GROUPS:
        assert _found(group) == []
        assert _agree(group) is False


def test_a_distribution_declaring_the_group_is_seen(site: Path) -> None:
    installed(site, "pass-plugin", "[warpwizard.passes]\ncounted = pass_plugin:PASS\n")
    assert _agree(plugins.PASSES_GROUP) is True
    assert _found(plugins.PASSES_GROUP) == [("counted", "pass_plugin:PASS")]
    assert _agree(plugins.PROBES_GROUP) is False  # its file names another group only


def test_another_groups_entry_points_are_not_a_plugin(site: Path) -> None:
    installed(site, "some-tool", "[console_scripts]\nwarpwizard-helper = some_tool:main\n")
    for group in GROUPS:
        assert _agree(group) is False


def test_an_egg_folder_on_the_path_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    egg = tmp_path / "eggy_plugin-0.1-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggy-plugin\nVersion: 0.1\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[warpwizard.probes]\neggy = eggy_plugin:Probe\n")
    monkeypatch.syspath_prepend(str(egg))
    assert _agree(plugins.PROBES_GROUP) is True
    assert _found(plugins.PROBES_GROUP) == [("eggy", "eggy_plugin:Probe")]


def test_a_zip_on_the_path_leaves_it_to_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.writestr("zipped_plugin-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped-plugin\nVersion: 0.1\n")
        z.writestr("zipped_plugin-0.1.dist-info/entry_points.txt", "[warpwizard.playbooks]\nzipped = zipped_plugin\n")
    monkeypatch.syspath_prepend(str(bundle))
    assert plugins._may_declare(plugins.PASSES_GROUP) is True  # a file on the path: the scan cannot say none
    assert _agree(plugins.PLAYBOOKS_GROUP) is True
    assert _found(plugins.PLAYBOOKS_GROUP) == [("zipped", "zipped_plugin")]


class _Finder:
    """A finder of distributions besides the path's (as a zipapp's or a bundler's may be)."""

    def find_spec(self, *args: Any) -> None:
        return None

    def find_distributions(self, *args: Any) -> Iterator[metadata.Distribution]:
        return iter(())


def test_a_finder_of_its_own_leaves_it_to_importlib_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, _Finder()])
    for group in GROUPS:
        assert _agree(group) is True
