"""The seam between records and their renderers.

``Inspection.to_html()``, ``Transcript.to_markdown()`` and the notebook's ``_repr_html_`` ask this module
for a renderer by name; the report layer registers its renderers here when it is imported
(wizard/report/registry.py), and ``wizard/__init__`` names the function that imports it. So no record
imports a renderer, the import graph has no circle, and tests/first_hour/test_architecture.py sees every edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Renderer = Callable[..., str]

_RENDERERS: dict[str, Renderer] = {}
_PROVIDERS: list[Callable[[], None]] = []


def register(name: str, renderer: Renderer) -> None:
    """A renderer the report layer offers under ``name`` (``inspection``, ``transcript``, ``notebook``)."""
    _RENDERERS[name] = renderer


def provide(load: Callable[[], None]) -> None:
    """The function that registers the renderers (it imports the report layer), called on first use."""
    _PROVIDERS.append(load)


def renderer(name: str) -> Renderer:
    """The renderer registered as ``name``, the report layer loaded first when it is not yet."""
    for load in _PROVIDERS:
        if name in _RENDERERS:
            break
        load()
    found = _RENDERERS.get(name)
    if found is None:
        raise LookupError(f"no renderer registered as {name!r}")
    return found


def render(name: str, *args: Any) -> str:
    """``renderer(name)(*args)``: what a record's ``to_html``/``to_markdown`` return."""
    return renderer(name)(*args)
