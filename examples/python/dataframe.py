"""Load a shipped example trace into a pandas DataFrame and compare reported with true values.

    python examples/python/dataframe.py [TRACE] [PLOT.png]

Needs pandas (pip install 'warpwizard[pandas]'); draws the plot when matplotlib is installed, and
prints the table either way. The column names are Holistic Trace Analysis's where they mean the
same thing (s_name, ts, dur, stream, correlation, blocks_per_sm, warps_per_sm, est_occupancy), so
the frame joins HTA's kernel frame on correlation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import wizard

HERE = Path(__file__).resolve().parent


def main() -> None:
    trace = sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "traces" / "grid-overflow.json")
    report = wizard.inspect_traces(trace)
    frame = report.to_dataframe()
    columns = ["s_name", "mechanism", "warps_per_sm", "true_warps_per_sm", "est_occupancy", "true_est_occupancy"]
    shown = frame[columns].copy()
    shown["s_name"] = shown["s_name"].str.slice(0, 40)
    print(shown.to_string(index=False))
    wrong = frame[frame["mechanism"].isin(["A", "A'", "B", "C", "D", "E", "?"])]
    print(f"\n{len(wrong)} of {len(frame)} launches carry a wrong value; mechanisms {report.mechanisms}")
    if len(sys.argv) > 2:
        plot(frame, sys.argv[2])


def plot(frame: object, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.scatter(frame["true_warps_per_sm"], frame["warps_per_sm"])  # type: ignore[index]
    ax.set_xscale("symlog")
    ax.set_yscale("symlog")
    ax.set_xlabel("true warps per SM")
    ax.set_ylabel("reported warps per SM")
    ax.axline((1, 1), slope=1, linestyle="--", color="gray")
    fig.savefig(path, dpi=100)
    print(f"plot written to {path}")


if __name__ == "__main__":
    main()
