"""Where warpwizard's own playbooks lie: the loader's default search path and discovery's last place."""

from __future__ import annotations

from pathlib import Path


def packaged_dir() -> Path:
    """Playbooks inside the installed package, or the checkout's playbooks/ in development."""
    inside = Path(__file__).resolve().parent.parent / "playbooks"
    if inside.is_dir():
        return inside
    return Path(__file__).resolve().parent.parent.parent / "playbooks"
