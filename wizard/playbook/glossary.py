"""GPU basics for new engineers: each word defined once, used by every playbook.

With ``--teach`` (and in ``warpwizard explain``), the first time one of these words appears in the text a
session shows (a step's or node's explanation, a prompt), its definition is shown once, never again in
that session. Playbook text is only searched for the words (our own patterns, never the playbook's), so
nothing in it is executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.trace.metrics.mechanisms import Mechanism


@dataclass(frozen=True, slots=True)
class Term:
    word: str
    pattern: re.Pattern[str]
    definition: str


def _term(word: str, forms: str, definition: str, *, case: bool = False) -> Term:
    flags = 0 if case else re.IGNORECASE
    return Term(word, re.compile(rf"(?<![\w.-])(?:{forms})(?![\w-])", flags), definition)


# Brief and correct; the order is the order a newcomer meets them in a profile, and each definition uses
# only words defined above it (tests/first_hour/test_teach_walk.py checks it), so a session that defines a word
# defines the words its definition uses first; each leans on as few as it can, so a title such as the
# flagship's ("warps per SM", "occupancy") brings five definitions, not ten.
TERMS: tuple[Term, ...] = (
    _term(
        "kernel",
        "kernels?",
        "a function that runs on the GPU, started from the CPU; one op (a matmul, an add) starts one or more.",
    ),
    _term(
        "launch",
        "launch(?:es|ed|ing)?",
        "the CPU call (cudaLaunchKernel and kin) that queues a kernel on the GPU; it returns before the kernel runs.",
    ),
    _term(
        "SM",
        "SMs?|streaming multiprocessors?",
        "streaming multiprocessor: one of the GPU's processors (an H100 has 132); each runs many threads at once.",
        case=True,
    ),
    _term(
        "grid / block",
        r"grids?|thread blocks?|blocks?(?![ /]per[ /]SM)",  # "blocks per SM" is a word of its own
        "a launch's shape: the grid is how many blocks run (x, y, z); a block is a group of threads (up to 1024) "
        "that run together on one SM and share its memory.",
    ),
    _term(
        "warp",
        r"warps?(?![ -/]per[ -/]SM)",  # "warps per SM" is a word of its own
        "32 threads of a block that an SM runs together, in lockstep: the unit the GPU schedules.",
    ),
    _term(
        "registers",
        "registers?",
        "the fastest memory, private to each thread; each SM has a fixed number (64K on recent GPUs), so the "
        "more registers a kernel's threads use, the fewer of them run at once.",
    ),
    _term(
        "shared memory",
        "shared[- ]memory|smem",
        "fast memory on each SM that the threads of one block share (up to 48 KB per block by default, more "
        "when a kernel opts in); like registers, it limits how many blocks run at once.",
    ),
    _term(
        "blocks per SM",
        "blocks[ /]per[ /]SM|blocks/SM",
        "a profiler metric: the grid's block count divided by the GPU's SM count, the whole grid spread "
        "evenly over the SMs, not the blocks an SM holds at once.",
    ),
    _term(
        "warps per SM",
        "warps[ -/]per[ -/]SM|warps/SM",
        "a profiler metric: a launch's threads, in groups of 32, divided by the GPU's SM count; it counts the "
        "whole launch, not what an SM holds at once, so thousands are legal, but it can never be negative.",
    ),
    _term(
        "occupancy",
        "occupancy",
        "how full a kernel keeps the GPU's processors: the threads they hold at once as a share of the most they "
        "could; the memory each group of threads needs limits it. Higher is not always faster.",
    ),
    _term(
        "int32",
        "int32|32-bit integers?|32-bit int|signed 32-bit",
        "a 32-bit signed integer: it holds at most 2^31-1 (about 2.1 billion); a product above that wraps to a "
        "negative number.",
    ),
    _term(
        "stream",
        "streams?",
        "a queue of GPU work: kernels on one stream run in order, kernels on different streams may overlap.",
    ),
    _term(
        "correlation id",
        "correlation ids?|correlation",
        "the number the profiler gives a launch and the kernel it started, so a trace can link CPU call and GPU work.",
    ),
    _term(
        "CUPTI",
        "CUPTI",
        "NVIDIA's CUDA Profiling Tools Interface: the library that reports kernels and their times to profilers.",
        case=True,
    ),
    _term(
        "Kineto",
        "Kineto",
        "the PyTorch profiler's GPU part: it reads CUPTI (or ROCm's roctracer) and writes the trace JSON.",
    ),
    _term(
        "CUDA graph",
        "CUDA graphs?|graphs? launch(?:es)?|cudaGraphLaunch",
        "kernels captured once and replayed with one launch (cudaGraphLaunch); saves CPU time, hides the kernels' "
        "individual launches.",
    ),
    _term(
        "rank",
        "ranks?",
        "one process of a distributed job, usually one per GPU, numbered from 0.",
    ),
    _term(
        "NCCL",
        "NCCL",
        "NVIDIA's library for collectives between GPUs (all-reduce, all-gather); each call waits for every rank.",
        case=True,
    ),
    _term(
        "PDL",
        "PDL|programmatic dependent launch",
        "Programmatic Dependent Launch: a kernel launched with it may start before the kernel ahead of it on its "
        "stream has finished (Hopper and later), so kernels on one stream overlap on purpose.",
    ),
    _term(
        "python_function",
        "python_function",
        "the trace's event for one Python call, recorded with with_stack=True: often most of a trace's events.",
        case=True,
    ),
    _term(
        "Self CUDA",
        "Self CUDA",
        "key_averages()' column of the GPU time an op's own kernels took, not its children ops'; Self CUDA % is "
        "that time as a share of all kernel time.",
        case=True,
    ),
    _term(
        "mechanism",
        r"mechanisms?(?: [A-G]'?(?![\w']))?",
        "warpwizard's letter for why a kernel's metric is wrong or looks wrong: "
        + "; ".join(f"{m.value} {m.summary}" for m in Mechanism)
        + ".",
    ),
    _term(
        "trace doctor",
        "trace doctor",
        "warpwizard's one read of a trace: it recomputes every kernel's warps per SM, blocks per SM and "
        "occupancy from the trace's own numbers, names a mechanism for each wrong one, and runs the health "
        "check (every way a trace is known to lie).",
    ),
)


def uses(term: Term, terms: tuple[Term, ...] = TERMS) -> list[Term]:
    """The other glossary words ``term``'s definition uses."""
    return [t for t in terms if t is not term and t.pattern.search(term.definition)]


@dataclass
class Glossary:
    """One session's glossary: which words were already defined."""

    terms: tuple[Term, ...] = TERMS
    shown: set[str] = field(default_factory=set)

    def new_words(self, text: str) -> list[Term]:
        """The terms ``text`` uses that this session has not defined yet, with the undefined words their
        definitions use, in glossary order (each definition uses only words above it); now defined."""
        wanted = {t.word for t in self.terms if t.word not in self.shown and t.pattern.search(text)}
        for term in reversed(self.terms):  # a word's definition may need words above it, never below
            if term.word in wanted:
                wanted.update(t.word for t in uses(term, self.terms) if t.word not in self.shown)
        found = [t for t in self.terms if t.word in wanted]
        self.shown.update(wanted)
        return found


def with_definitions(markdown: str) -> str:
    """Markdown with each glossary word defined once, in a quoted line after the paragraph that first
    uses it (``warpwizard explain``)."""
    glossary = Glossary()
    out: list[str] = []
    pending = ""  # text since the last place a definition may go (never inside a ``` block)
    for paragraph in markdown.split("\n\n"):
        out.append(paragraph)
        pending += paragraph + "\n"
        if sum(line.lstrip().startswith("```") for line in pending.splitlines()) % 2:
            continue
        words = glossary.new_words(pending)
        pending = ""
        if words:
            out.append("\n".join(f"> *new word* **{t.word}**: {t.definition}" for t in words))
    return "\n\n".join(out)
