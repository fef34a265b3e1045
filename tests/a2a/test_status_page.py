"""The status page at ``/``, rendered by a real headless Chromium while an evaluation runs."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from PIL import Image

from netarena.a2a_llm import purple_app
from netarena.common.serving.server import green_app
from tests.a2a.servers import serving, stream_03
from tests.a2a.slow import SlowToyAgent
from tests.helpers.toy import ToyApp

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BAR = (0x3A, 0x7B, 0xD5)  # the progress bar's fill, a colour used nowhere else on the page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (scripts/setup.sh "
                                                "installs it as root)"),
]


def _chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    proc = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


async def test_status_page_shows_a_running_evaluation_in_chromium(tmp_path: Path) -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(SlowToyAgent(0.5), url)) as purple,  # chromium starts slowly
    ):
        running = asyncio.create_task(stream_03(green, {
            "participants": {"toy_operator": purple},
            "config": {"num_queries": 30, "seed": 6, "concurrency": 1}}, timeout_s=300))
        async with httpx.AsyncClient(timeout=5) as http:
            for _ in range(200):
                listing = (await http.get(green + "evaluations")).json()
                if listing and listing[0]["done"] >= 3:
                    break
                await asyncio.sleep(0.05)
        shot = tmp_path / "status.png"
        dom = await asyncio.to_thread(_chromium, tmp_path, "--dump-dom", green)
        await asyncio.to_thread(_chromium, tmp_path, "--window-size=1100,500",
                                f"--screenshot={shot}", green)
        events = await running
    assert events[-1]["status"]["state"] == "completed"
    assert "Running (1)" in dom and "toy_operator" in dom and purple in dom
    assert "query " in dom and "/30</td>" in dom and "correctness 1.00" in dom
    public_id = listing[0]["id"]
    assert f'href="/evaluations/{public_id}/report"' in dom
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 500)
    pixels = [image.getpixel((x, y)) for y in range(image.height) for x in range(image.width)]
    filled = [i for i, p in enumerate(pixels)
              if all(abs(a - b) <= 8 for a, b in zip(p, BAR, strict=True))]
    # A partly filled bar (220 x 14 px when full): at least one query's worth, never all.
    assert 220 * 14 // 30 < len(filled) < 220 * 14 * 0.9, len(filled)
    rows = {i // image.width for i in filled}
    assert 8 <= len(rows) <= 16  # one bar, about 14 px high
    assert len(set(pixels)) > 20  # text was drawn (not a blank page)
