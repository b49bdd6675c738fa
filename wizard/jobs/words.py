"""A job's inspection in words: the lines ``trace inspect --engine`` prints (the headline, the job's checks, the
per-check fold, the worst ranks, the failures), as long at 10,000 ranks as at 10: aggregates and outliers only."""

from __future__ import annotations

from wizard.formatting import plural
from wizard.jobs.reduce import NAMED, JobInspection

FAILED_SHOWN = 10  # failed ranks named in the terminal's lines (--json names NAMED)


def job_lines(job: JobInspection) -> list[str]:
    """The lines, plain text (the CLI escapes each as it prints it)."""
    lines = [
        f"Job: {plural(job.ranks, 'rank')}, {len(job.summaries)} summarised ({job.reused} reused), "
        f"{len(job.failures)} failed; engine {job.engine}; health {job.health_status}"
    ]
    lines += [f"  {c.status:<8} {c.check} [all ranks]  {c.summary}" for c in job.job_health]
    if job.folded:
        lines.append("Checks over the ranks (ranks at each status):")
        for check, counts in job.folded.items():
            said = ", ".join(f"{status} {n}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            lines.append(f"  {check}: {said}")
    worst = [row for row in job.worst() if row.problems]
    if worst:
        lines.append(f"Worst ranks (the first {len(worst)}):")
        lines += [
            f"  {row.label:<10} {row.status:<8} " + ", ".join(f"{c} {s}" for c, s in row.problems.items())
            for row in worst
        ]
    if job.failures:
        lines.append(f"Failed ranks ({len(job.failures)}; the job was judged without them):")
        lines += [f"  {f.kind}: {f.reason}" for f in job.failures[:FAILED_SHOWN]]
        more = len(job.failures) - FAILED_SHOWN
        if more > 0:
            lines.append(f"  and {more} more (--json names the first {NAMED})")
    return lines
