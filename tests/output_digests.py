"""Every command's output on every shared trace and example, as SHA-256 digests: the top floor's rebuild
(issue 46) promised the same bytes, and this is how the test run holds it.

A case is a command line; its output is the exit status, stdout and stderr of ``main(argv, system)`` run
in-process with a fixed environment (no colour, 200 columns, a private HOME, state and report directory),
with the tree's, the shared folder's and the scratch directory's paths written as ``<REPO>``, ``<SHARED>``
and ``<TMP>``. Only digests are committed (tests/data/output_digests.json), never a piece of a trace.

    python -m tests.output_digests --write        # take today's outputs as the reference (a named fix)
    python -m tests.output_digests --check        # which cases differ
    python -m tests.output_digests --diff CASE --base REV
                                                  # the unified diff of one case against commit REV

``--diff`` runs this same file against a temporary ``git worktree`` of REV (``--tree``), so the reference
needs no stored output: the old code is run again.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
DIGESTS = HERE / "tests" / "data" / "output_digests.json"
# the commands whose help text is held (the bare command's too)
HELP = (
    (), ("run",), ("probe",), ("list",), ("validate",), ("graph",), ("explain",), ("probes",), ("answers",),
    ("schema",), ("examples",), ("completion",), ("trace",), ("trace", "inspect"), ("trace", "fix"), ("compare",),
    ("diff",), ("env",),
)  # fmt: skip
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".pftrace", ".pftrace.gz", ".ncu-rep")


def shared_dir(tree: Path) -> Path:
    return tree.parent / "shared"


def _trace_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))


def cases(tree: Path = HERE) -> dict[str, list[str]]:
    """Every case's id and its command line (paths as the tree and the shared folder hold them)."""
    found: dict[str, list[str]] = {}
    for help_of in HELP:
        found["help " + " ".join(help_of)] = [*help_of, "--help"]
    for words in (["list"], ["probes"], ["schema"], ["examples"], ["validate", "playbooks"]):
        found[" ".join(words)] = words
    for playbook in sorted((tree / "playbooks").glob("*.yaml")):
        name = playbook.stem
        for words in (["graph", name], ["graph", name, "--format", "dot"], ["explain", name], ["answers", name]):
            found[" ".join(words)] = words
    traces = shared_dir(tree) / "traces"
    inputs = [*(_trace_files(traces) if traces.is_dir() else []), *sorted((tree / "examples" / "traces").glob("*"))]
    if (traces / "dlrm-2ranks").is_dir():
        inputs.append(traces / "dlrm-2ranks")
    for path in inputs:
        label, given = _label(path, tree), _given(path, tree)
        found[f"inspect {label}"] = ["trace", "inspect", "--quiet", given]
        found[f"inspect --json {label}"] = ["trace", "inspect", "--quiet", "--json", given]
        found[f"inspect --markdown {label}"] = ["trace", "inspect", "--quiet", "--markdown", "-", given]
    for pair in sorted((traces / "pairs").glob("*")) if traces.is_dir() else []:
        two = [str(p) for p in sorted(_trace_files(pair), key=lambda p: (not p.name.startswith("before"), p.name))]
        if len(two) == 2:
            found[f"diff {_label(pair, tree)}"] = ["diff", *two]
            found[f"diff --json {_label(pair, tree)}"] = ["diff", "--json", *two]
    found.update(_examples(tree))
    return found


def _examples(tree: Path) -> dict[str, list[str]]:
    import yaml

    manifest = yaml.safe_load((tree / "examples" / "manifest.yaml").read_text(encoding="utf-8"))
    found: dict[str, list[str]] = {}
    for example in manifest["examples"]:
        playbook = example.get("playbook") or manifest["playbook"]
        found[f"run {example['name']}"] = ["run", playbook, "--answers", example["answers"]]
        found[f"run --json {example['name']}"] = ["run", playbook, "--answers", example["answers"], "--json"]
    return found


def _label(path: Path, tree: Path) -> str:
    for root, word in ((shared_dir(tree) / "traces", "shared"), (tree, "repo")):
        if path.is_relative_to(root):
            return f"{word}:{path.relative_to(root)}"
    return str(path)


def _given(path: Path, tree: Path) -> str:
    """A path inside the tree as the command line gives it from the tree (so another tree runs its own copy)."""
    return str(path.relative_to(tree)) if path.is_relative_to(tree) else str(path)


def output(argv: list[str], tree: Path = HERE) -> str:
    """The case's exit status and streams, its paths written as placeholders."""
    from wizard.cli.app import main
    from wizard.system import System

    with tempfile.TemporaryDirectory(prefix="ww-digest-") as scratch:
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "NO_COLOR": "1", "COLUMNS": COLUMNS, "TERM": "dumb", "LANG": "C.UTF-8",
            "HOME": scratch, "XDG_STATE_HOME": f"{scratch}/state", "XDG_CACHE_HOME": f"{scratch}/cache",
            "WARPWIZARD_REPORT_DIR": f"{scratch}/report",
        }  # fmt: skip
        out, err = io.StringIO(), io.StringIO()
        system = System(stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ, isatty=lambda s: False)
        with contextlib.chdir(tree):
            status = main(list(argv), system)
        text = f"exit {int(status)}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
        for path, word in ((scratch, "<TMP>"), (str(shared_dir(tree)), "<SHARED>"), (str(tree), "<REPO>")):
            text = text.replace(os.path.realpath(path), word).replace(path, word)
        return steady(text)


# what differs between two runs of the same code, or the same code in two checkouts: wall-clock times and dates (the
# transcript's, the timing block's, a probe's "(2.0 s)"), a file's modification time, and the padding and rules a
# terminal table draws around a path whose length is the checkout's; written as placeholders before the digest
MOVING = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<WHEN>"),
    (re.compile(r'("\w*_s"): -?[0-9.e+-]+'), r"\1: <S>"),
    (re.compile(r'("mtime(?:_ns)?"): (?:\d+|"[^"]*")'), r"\1: <MTIME>"),
    (re.compile(r'("entries_sha256"): "[0-9a-f]*"'), r"\1: <ENTRIES>"),  # a directory's entries, their mtimes too
    (re.compile(r"\((?:\d+(?:\.\d+)?) s\)"), "(<S> s)"),
    (re.compile(r"[─━═]{2,}"), "─"),
    (re.compile(r" {2,}"), " "),
    (re.compile(r" +$", re.M), ""),
)
# wide enough that no line of any case wraps, so where a line breaks never depends on the checkout's path
COLUMNS = "1000"


def steady(text: str) -> str:
    for pattern, word in MOVING:
        text = pattern.sub(word, text)
    return text


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def frozen() -> dict[str, str]:
    document: dict[str, str] = json.loads(DIGESTS.read_text(encoding="utf-8"))["cases"]
    return document


def _write(tree: Path) -> None:
    table = {case: digest(output(argv, tree)) for case, argv in cases(tree).items()}
    text = json.dumps({"about": __doc__.splitlines()[0], "cases": table}, indent=1, sort_keys=True) + "\n"
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    temporary = DIGESTS.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(DIGESTS)
    print(f"{len(table)} cases written to {DIGESTS.relative_to(HERE)}")


def _check(tree: Path) -> int:
    want = frozen()
    differ = [case for case, argv in cases(tree).items() if want.get(case) != digest(output(argv, tree))]
    for case in differ:
        print(f"differs: {case}")
    print(f"{len(differ)} of {len(want)} cases differ")
    return 1 if differ else 0


@contextlib.contextmanager
def _worktree(base: str) -> Iterator[Path]:
    """REV checked out beside this tree (so its ../shared is the same), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="ww-base-", dir=HERE.parent))
    where.rmdir()
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(where), base], check=True)
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(where)], check=False)


def _diff(case: str, base: str) -> int:
    argv = cases(HERE)[case]
    new = output(argv, HERE)
    with _worktree(base) as old_tree:
        if (shared_dir(HERE)).exists() and not shared_dir(old_tree).exists():
            raise SystemExit("the base tree must lie beside ../shared")
        command = [sys.executable, __file__, "--print", json.dumps(argv), "--tree", str(old_tree)]
        old = subprocess.run(command, capture_output=True, text=True, check=True, cwd=old_tree).stdout
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{base}: {case}", f"now: {case}")
    sys.stdout.writelines(lines)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    doing = parser.add_mutually_exclusive_group(required=True)
    doing.add_argument("--write", action="store_true")
    doing.add_argument("--check", action="store_true")
    doing.add_argument("--diff", metavar="CASE")
    doing.add_argument("--print", metavar="ARGV_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--tree", type=Path, default=HERE, help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path.insert(0, str(tree))
    if args.print:
        sys.stdout.write(output(json.loads(args.print), tree))
        return 0
    if args.write:
        _write(tree)
        return 0
    if args.check:
        return _check(tree)
    return _diff(args.diff, args.base)


if __name__ == "__main__":
    raise SystemExit(main())
