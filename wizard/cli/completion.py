"""Shell completion: shtab's script from the parser, told what each argument takes.

shtab alone completed no playbook, probe or file name, and a positional without a completer
turned off the shell's own filename completion. Here every argument that takes a path completes
paths (directories where a directory is taken), playbook arguments complete playbook ids and
files, probe names and ``--from``'s node ids come from this installation, asked at completion
time (``warpwizard completion --names KIND``, from ``runs.completion_names``), so a team's
playbooks on the search path complete too.
"""

from __future__ import annotations

import argparse
from typing import Any

NAME_KINDS = ("playbooks", "probes", "nodes", "examples")

# Arguments by what they take: names where the command's module declares them (its ``COMPLETES``: dest -> kind,
# marked on the argument by wizard/cli/parser.py); else paths by dest or metavar.
_PATH_METAVARS = {"FILE", "PATH", "REPORT.json"}
_PATH_DESTS = {"paths", "input", "output", "reports"}  # validate/trace inspect, trace fix, compare


# The playbook a `run` line names, for --from's nodes: the first word after `run` that is neither an option nor
# an option's value (`run --answers t.json rank-skew --from` names rank-skew, not t.json). {takes} is `run`'s
# options that take a value, read from the parser. bash splits `--from=x` at the `=` (COMP_WORDBREAKS): the word
# after a lone `=` is a value too. zsh: shtab's subcommand dispatch (`*::`) restarts `words` at `run`, so the
# walk starts at words[1] (it started at words[2], never saw `run`, and asked for every playbook's nodes).
_PLAYBOOK_WALK = (  # the loop's body, one for bash and zsh (they differ in how the words are listed)
    '    if [[ -n $skip ]]; then skip=""; continue; fi\n'
    "    if [[ -n $seen && -z $pb ]]; then\n"
    "      case $w in {takes}) skip=1;; -*) ;; *) pb=$w;; esac\n"
    "    fi\n"
    "    [[ $w == run ]] && seen=1\n"
    "  done\n"
)
_BASH_PLAYBOOK = (
    '  local pb="" w seen="" skip=""\n'
    '  for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do\n'
    "    if [[ $w == = ]]; then skip=1; continue; fi\n" + _PLAYBOOK_WALK
)
_ZSH_PLAYBOOK = '  local pb="" w seen="" skip=""\n  for w in "${{(@)words[1,CURRENT-1]}}"; do\n' + _PLAYBOOK_WALK
_FISH_PLAYBOOK = (
    '  set -l pb ""\n'
    '  set -l seen ""\n'
    '  set -l skip ""\n'
    "  for w in (commandline -opc)\n"
    '    if test -n "$skip"\n'
    '      set skip ""\n'
    '    else if test -n "$seen"; and test -z "$pb"\n'
    "      switch $w\n"
    "        case {takes}\n"
    "          set skip 1\n"
    "        case '-*'\n"
    "        case '*'\n"
    "          set pb $w\n"
    "      end\n"
    "    end\n"
    '    test "$w" = run; and set seen 1\n'
    "  end\n"
)
# bash's compgen -f offers hidden files for an empty word (`run <Tab>` listed .git and .venv): only when
# the name being completed starts with a dot.
_BASH_NO_HIDDEN = ' | { if [[ ${1##*/} == .* ]]; then cat; else grep -v -E "(^|/)\\.[^/]*$"; fi; }'


def _dynamic(kind: str, with_files: bool, takes: tuple[str, ...] = ()) -> dict[str, Any]:
    """A shtab completer that asks this program for ``kind`` names (and paths, when ``with_files``); for nodes,
    ``takes`` is `run`'s options that take a value (skipped, with their value, looking for the playbook)."""
    ask = f"warpwizard completion --names {kind} 2>/dev/null"
    fn = f"_warpwizard_names_{kind}{'_files' if with_files else ''}"
    files_bash = '\n  compgen -f -- "$1"' + _BASH_NO_HIDDEN if with_files else ""
    files_zsh = "\n  _files" if with_files else ""
    files_fish = "; __fish_complete_path (commandline -ct)" if with_files else ""
    # the nodes of the playbook on the line, in every shell (fish listed every playbook's)
    ask_sh = f'warpwizard completion --names {kind} ${{pb:+--playbook "$pb"}} 2>/dev/null' if kind == "nodes" else ask
    sh_takes = "|".join(takes) or "--"
    pb_bash, pb_zsh = (
        (_BASH_PLAYBOOK.format(takes=sh_takes), _ZSH_PLAYBOOK.format(takes=sh_takes)) if kind == "nodes" else ("", "")
    )
    preamble = {
        "bash": f'{fn}() {{\n{pb_bash}  compgen -W "$({ask_sh})" -- "$1"{files_bash}\n}}\n',
        "zsh": f'{fn}() {{\n{pb_zsh}  local -a names\n  names=(${{(f)"$({ask_sh})"}})\n'
        f"  compadd -a names{files_zsh}\n}}\n",
    }
    fish = f"({ask}{files_fish})"
    if kind == "nodes":  # fish has no ${pb:+...}: the playbook is passed only when the line names one
        preamble["fish"] = (
            f"function {fn}\n{_FISH_PLAYBOOK.format(takes=' '.join(takes) or '--')}"
            '  if test -n "$pb"\n'
            f'    warpwizard completion --names {kind} --playbook "$pb" 2>/dev/null\n'
            "  else\n"
            f"    {ask}\n"
            "  end\n"
            "end\n"
        )
        fish = f"({fn})"
    return {
        "bash": fn,
        "zsh": fn,  # a function: zsh's _arguments specs are expanded when the script is sourced
        "fish": fish,
        "tcsh": "f" if with_files else "",
        "preamble": preamble,
    }


def _takes_a_value(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The option strings of ``parser`` that take a value (``--answers FILE``), not flags (``--teach``)."""
    return tuple(o for a in parser._actions if a.option_strings and a.nargs != 0 for o in a.option_strings)


def _attach(parser: argparse.ArgumentParser) -> None:
    import shtab

    from wizard.cli.arguments import COMPLETES_ATTR

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _attach(sub)
            continue
        kind = getattr(action, COMPLETES_ATTR, None)  # a command module's COMPLETES, marked by build_parser
        if kind == "nodes":
            action.complete = _dynamic(kind, with_files=False, takes=_takes_a_value(parser))  # type: ignore[attr-defined]
        elif kind is not None:  # playbooks are files too: a path to a .yaml
            action.complete = _dynamic(kind, with_files=kind == "playbooks")  # type: ignore[attr-defined]
        elif action.metavar == "DIR":
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
        elif action.metavar in _PATH_METAVARS or (not action.option_strings and action.dest in _PATH_DESTS):
            action.complete = shtab.FILE  # type: ignore[attr-defined]


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell``, generated from ``parser`` (so it never drifts from the options)."""
    import shtab

    _attach(parser)
    return str(shtab.complete(parser, shell=shell))
