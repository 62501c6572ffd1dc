"""A two-constant sweep's heatmap, saved as SVG and HTML, renders in a real browser: headless Chromium draws it,
and the picture holds the passing cells' green and the failing cells' red.

Skipped, with the reason, where no Chromium is installed; CI installs Debian's and sets
HANDWIRED_REQUIRE_CHROMIUM=1, and then a missing browser fails the test instead.
"""

import json
import struct
import subprocess
import zlib

import numpy as np
import pytest
from chromium import executable
from test_cli import invoke
from test_workbench import two_constant_document


def browser() -> str:
    return executable("the heatmap is not rendered in a browser")


def read_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG, not interlaced (what Chromium's screenshots are) -> [height, width, channels]."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, header = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), dtype=np.int32)
    for y in range(height):  # undo each row's filter (PNG spec, section 9)
        kind, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        up = out[y - 1] if y else np.zeros_like(row)
        if kind in (0, 2):
            out[y] = (row + (up if kind == 2 else 0)) % 256
            continue
        line = np.zeros_like(row)
        for x in range(len(row)):
            left = line[x - channels] if x >= channels else 0
            corner = up[x - channels] if x >= channels else 0
            if kind == 1:
                guess = left
            elif kind == 3:
                guess = (left + up[x]) // 2
            else:
                p = left + up[x] - corner
                guess = min((abs(p - left), 0, left), (abs(p - up[x]), 1, up[x]), (abs(p - corner), 2, corner))[2]
            line[x] = (row[x] + guess) % 256
        out[y] = line
    return out.reshape(height, width, channels)


@pytest.mark.parametrize("kind", ["svg", "html"])
def test_a_two_constant_heatmap_renders_in_headless_chromium(kind, tmp_path):
    chromium = browser()
    weights = tmp_path / "two.json"
    weights.write_text(json.dumps(two_constant_document()), encoding="utf-8")
    data = json.loads(invoke("sweep", str(weights), "Lg=1..4", "B=0..4", "--steps", "6", "--json").stdout)
    passing = sum(point["passes"] for point in data["points"])  # checked value by value in test_workbench
    assert 0 < passing < 36
    picture = tmp_path / f"heat.{kind}"
    result = invoke("sweep", str(weights), "Lg=1..4", "B=0..4", "--steps", "6", f"--{kind}", str(picture))
    assert result.exit_code == 0, result.output
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1400,1400", picture.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists(), "Chromium wrote no screenshot"
    pixels = read_png(shot.read_bytes())[:, :, :3]
    r, g, b = pixels[:, :, 0], pixels[:, :, 1], pixels[:, :, 2]
    green = int(((g > 80) & (r < 30) & (b > 40) & (b < 80)).sum())  # a passing cell: on rgb(0, 90…210, 60)
    red = int(((r > 180) & (g < 60) & (b < 60)).sum())  # a failing cell: on rgb(200, 40, 40)
    cell = 100  # pixels in a cell's background at the least, at any font size a browser picks
    assert green > passing * cell and red > (36 - passing) * cell, (green, red)
