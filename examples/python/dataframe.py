"""Load a shipped example trace into a pandas DataFrame and compare reported with true values.

    python examples/python/dataframe.py [TRACE] [PLOT.html]

Needs pandas (pip install 'warpwizard[pandas]'); draws the plot with plotly (pip install
'warpwizard[html]') when it is installed, and prints the table either way. For the whole picture,
``report.to_html()`` writes the page ``warpwizard trace inspect --report FILE.html`` does. The column names are Holistic Trace Analysis's where they mean the
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
    wrong = frame[frame["mechanism"].notna() & (frame["mechanism"] != "F")]  # F: large by design, not wrong
    found = ", ".join(f"{m} ({n})" for m, n in sorted(report.mechanisms.items()))
    print(f"\n{len(wrong)} of {len(frame)} launches carry a wrong value; mechanisms {found}")
    if len(sys.argv) > 2:
        plot(frame, sys.argv[2])


def plot(frame: object, path: str) -> None:
    """The figure as an HTML file that opens offline (plotly, the html extra). Only to a name ending
    in .html: plotly writes a page, and a page named plot.png opens in no image viewer."""
    if not path.lower().endswith((".html", ".htm")):
        sys.exit(f"dataframe.py: {path}: the plot is an HTML page; name it PLOT.html")
    try:
        fig = figure(frame)
    except ImportError:
        print("plotly is not installed: no plot (pip install 'warpwizard[html]')")
        return
    fig.write_html(path, include_plotlyjs=True)
    print(f"plot written to {path}")


def figure(frame: object) -> object:
    """Reported against true warps per SM, one point per launch. Log axes cannot show the negative values
    mechanism A prints, so those are drawn on a strip of their own below, at their true value; the dotted
    line is where reported equals true."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = frame[frame["true_warps_per_sm"] > 0]  # type: ignore[index]
    fine = rows[rows["warps_per_sm"] > 0]
    impossible = rows[~(rows["warps_per_sm"] > 0)]
    fig = make_subplots(rows=2, cols=1, row_heights=[0.8, 0.2], shared_xaxes=True)
    fig.add_trace(go.Scatter(x=fine["true_warps_per_sm"], y=fine["warps_per_sm"], mode="markers",
                             text=fine["mechanism"], name="reported"), row=1, col=1)
    fig.add_trace(go.Scatter(x=impossible["true_warps_per_sm"], y=["negative, 0 or not finite"] * len(impossible),
                             mode="markers", text=impossible["mechanism"], name="impossible"), row=2, col=1)
    low, high = rows["true_warps_per_sm"].min(), rows["true_warps_per_sm"].max()
    fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", line={"dash": "dot"},
                             name="reported = true"), row=1, col=1)
    fig.update_xaxes(type="log", title_text="true warps per SM", row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(type="log", title_text="reported warps per SM", row=1, col=1)
    return fig


if __name__ == "__main__":
    main()
