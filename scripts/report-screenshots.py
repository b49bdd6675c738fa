"""Screenshots of the HTML report for the docs (docs/images/*.png): the grid-overflow example's run and a
four-rank directory with A, B, C and E, each at 1280 and at 390 pixels wide (a phone).

    .venv/bin/python scripts/report-screenshots.py      # needs the html and test extras, and chromium

Each run's screenshot starts at the trace's verdict (then the first pictures), kept small; the health
page's is its top.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from wizard.testing.traces import KernelSpec, TraceBuilder

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "images"


def rank_directory(where: Path) -> Path:
    ranks = where / "ranks"
    ranks.mkdir()
    specs = (
        KernelSpec("void at::native::index_elementwise_kernel<128, 4>", (100_000, 30_000, 1), (128, 1, 1)),
        KernelSpec("volta_sgemm_128x64_nn", (99, 1, 1), (128, 1, 1), plant="B"),
        KernelSpec("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>", (99, 1, 1), (128, 1, 1),
                   plant="C"),
        KernelSpec("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", (4096, 1, 1), (384, 1, 1), 168, 231424),
    )  # fmt: skip
    for rank, spec in enumerate(specs):
        builder = TraceBuilder(gpu="RTX2080Ti" if spec.plant == "B" else "H100")
        for _ in range(20):
            builder.add(spec)
            builder.add(KernelSpec("void at::native::reduce_kernel<512, 1>", (1000, 1, 1), (256, 1, 1), repeat=3))
        doc = builder.document()
        doc["distributedInfo"] = {"rank": rank, "world_size": len(specs)}
        (ranks / f"rank{rank}.json").write_text(json.dumps(doc).replace("Infinity", '"inf"'))
    return ranks


def health_directory(where: Path) -> Path:
    """Two ranks whose traces lie: dropped kernels, kernels hidden by an overlap, kernels before their launch,
    and a straggler rank at every all-reduce."""
    ranks = where / "health"
    ranks.mkdir()
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"
    for rank in range(2):
        builder = TraceBuilder()
        builder.set_metadata("distributedInfo", {"rank": rank, "world_size": 2})
        for step in range(40):
            builder.wait(40.0 * rank * (step % 5))  # rank 1 is late, by up to 160 us
            builder.add(KernelSpec("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", (8, 1, 1), (512, 1, 1), dur=80.0))
            builder.add(KernelSpec(gemm, (132, 1, 1), (384, 1, 1), 168, dur=140.0, launch="cuLaunchKernelEx"))
            builder.add(
                KernelSpec(
                    "void flash_fwd_kernel<Flash_fwd_kernel_traits>",
                    (64, 16, 1),
                    (128, 1, 1),
                    dur=60.0,
                    launch="cuLaunchKernelEx",
                )
            )
            if rank == 0 and step % 7 == 3:
                builder.add(
                    KernelSpec("void at::native::reduce_kernel<512, 1>", (1000, 1, 1), (256, 1, 1), kernel=False)
                )
            if rank == 1 and step > 25:
                builder.add(
                    KernelSpec(
                        "void at::native::vectorized_elementwise_kernel<4>", (99, 1, 1), (128, 1, 1), kernel_delay=-2.0
                    )
                )
        builder.write(ranks / f"rank{rank}.json")
    return ranks


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("needs chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        answers = base / "ranks.yaml"
        answers.write_text(f"have: trace\ntrace_path: {rank_directory(base)}\n")
        pages = {
            "report-grid-overflow": REPO / "examples" / "answers" / "grid-overflow.yaml",
            "report-ranks": answers,
        }
        health_page = base / "report-health.html"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "wizard",
                "trace",
                "inspect",
                str(health_directory(base)),
                "--report",
                str(health_page),
            ],
            check=False,
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip  (exit 1: the traces have problems)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 1300})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
            page.goto(health_page.as_uri())
            page.wait_for_selector("body[data-plots=drawn]", timeout=30_000)
            page.wait_for_timeout(300)
            shot = OUT / "report-health-1280.png"
            page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1280, "height": 1300})
            print(f"wrote {shot.relative_to(REPO)} ({shot.stat().st_size // 1024} KB)")
            page.close()
            for name, answers_file in pages.items():
                page_file = base / f"{name}.html"
                # no terminal: a run that finds a question unanswered says so, never waits
                subprocess.run(
                    [sys.executable, "-m", "wizard", "run", "negative-warps-per-sm", "--answers", str(answers_file),
                     "--report", str(page_file)],
                    check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=300,
                )  # fmt: skip
                for width, height in ((1280, 1500), (390, 1500)):
                    page = browser.new_page(viewport={"width": width, "height": height})
                    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
                    page.goto(page_file.as_uri())
                    page.wait_for_selector("body[data-plots=drawn]", timeout=30_000)
                    page.wait_for_timeout(300)
                    shot = OUT / f"{name}-{width}.png"
                    # from the trace's verdict down: the pictures, not only the run's diagnosis above them
                    top = page.evaluate(
                        "Math.max(0, (document.getElementById('ww-verdict') || document.body).offsetTop - 16)"
                    )
                    page.screenshot(
                        path=str(shot), full_page=True, clip={"x": 0, "y": top, "width": width, "height": height}
                    )
                    print(f"wrote {shot.relative_to(REPO)} ({shot.stat().st_size // 1024} KB)")
                    page.close()
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
