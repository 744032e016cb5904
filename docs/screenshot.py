"""Make docs/images/report.png, the README's screenshot: the HTML report of the README's command
(the bundled example, the default 999 permutations), its top 1100 x 840 px in headless Chromium.

    python docs/screenshot.py        # from the checkout's root; needs playwright and /usr/bin/chromium

The command it ran is written into the PNG (a tEXt chunk, key ``embsql-command``), so that
tests/docs/test_readme_python.py can check that the picture is the README command's report.
"""

from __future__ import annotations

import shlex
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images" / "report.png"
COMMAND = "embsql report examples/embeddings.parquet --vector embedding --group topic --model model"
KEY = b"embsql-command"


def with_text(png: bytes, key: bytes, value: str) -> bytes:
    """``png`` with a tEXt chunk ``key``=``value`` right after its IHDR chunk."""
    data = key + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    end_of_header = 8 + 4 + 4 + 13 + 4          # signature, then IHDR: length, type, 13 bytes, CRC
    return png[:end_of_header] + chunk + png[end_of_header:]


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        html = Path(folder) / "report.html"
        subprocess.run([sys.executable, "-m", "embsql", *shlex.split(COMMAND)[1:], "--no-progress", "--format", "html",
                        "--out", str(html)], check=True, cwd=ROOT)
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--no-sandbox", "--font-render-hinting=none"])
            page = browser.new_page(viewport={"width": 1100, "height": 840})
            page.goto(html.as_uri(), wait_until="load")
            png = page.screenshot(clip={"x": 0, "y": 0, "width": 1100, "height": 840})
            browser.close()
    OUT.write_bytes(with_text(png, KEY, COMMAND))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
