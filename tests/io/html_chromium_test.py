#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The HTML memory map checked as a person would: headless Chromium opens it.

Writes maps with the CLI (`tensormem plan ... --html`, `tensormem replay ...
--html`), then for each one:
- `chromium --headless --dump-dom FILE#selftest`: the page's own summary
  (#summary's data-buffers and data-total, written by its script after it
  drew) must match the plan the CLI printed; the self-test hovered the
  largest buffer (its id shown), zoomed and panned through the page's own
  event handlers;
- `chromium --headless --screenshot`: the PNG is not blank (many colours,
  coloured pixels over a good part of the canvas).
Exit 77 (CTest: skipped) with the reason when Chromium is absent.

Usage: html_chromium_test.py CLI [SHARED_DIR] [--keep DIR] [--without-onnx]
(--without-onnx: this CLI was built without the ONNX importer, so the shared
model is not planned; CMake passes it.)
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(browser, args, timeout=120):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--window-size=1200,800",
           "--virtual-time-budget=20000"] + args
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r, time.perf_counter() - t


def read_png(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unexpected PNG format {depth}/{color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def png_figures(path):
    w, h, bpp, rows = read_png(path)
    colours, coloured, total = set(), 0, 0
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(0, w, 2):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            colours.add((r >> 3, g >> 3, b >> 3))
            total += 1
            if max(r, g, b) - min(r, g, b) > 40:  # saturated: a buffer, not text or axes
                coloured += 1
    return w, h, len(colours), coloured / total


def summary(dom):
    m = re.search(r'<span id="summary"([^>]*)>', dom)
    if not m:
        return {}
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1)))


def check_map(browser, html, buffers, total, shot, label):
    failures = []
    r, seconds = run_chromium(browser, ["--dump-dom", "file://" + os.path.abspath(html) + "#selftest"])
    s = summary(r.stdout)
    print(f"{label}: {os.path.getsize(html):,} bytes, chromium --dump-dom {seconds:.2f} s, "
          f"summary {s}")
    if s.get("buffers") != str(buffers):
        failures.append(f"{label}: page says {s.get('buffers')} buffers, the plan has {buffers}")
    if s.get("total") != str(total):
        failures.append(f"{label}: page says total {s.get('total')}, the plan's is {total}")
    st = s.get("selftest", "")
    hover = re.search(r"hover=(\S+)", st)
    zoom = re.search(r"zoom=([0-9.]+)", st)
    pan = re.search(r"pan=(-?[0-9]+)px", st)
    if not hover or hover.group(1) == "none" or "tip=shown" not in st:
        failures.append(f"{label}: hovering the largest buffer showed nothing ({st!r})")
    if not zoom or float(zoom.group(1)) <= 1.1:
        failures.append(f"{label}: the wheel did not zoom in ({st!r})")
    if not pan or abs(int(pan.group(1)) - 100) > 2:
        failures.append(f"{label}: dragging 100 px did not pan 100 px ({st!r})")
    r, seconds = run_chromium(browser, ["--screenshot=" + shot, "file://" + os.path.abspath(html)])
    if not os.path.exists(shot):
        failures.append(f"{label}: no screenshot ({r.stderr[-500:]})")
        return failures
    w, h, colours, coloured = png_figures(shot)
    print(f"{label}: screenshot {w}x{h}, {colours} colours, {coloured:.1%} coloured, {seconds:.2f} s")
    if colours < 8 or coloured < 0.05:
        failures.append(f"{label}: the screenshot looks blank ({colours} colours, {coloured:.1%} coloured)")
    return failures


def plan_figures(cli, path, out_html, extra=()):
    r = subprocess.run([cli, "plan", path, "--json", "--html", out_html, *extra],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"tensormem plan {path} failed: {r.stderr}")
    j = json.loads(r.stdout)
    best = min(j["results"], key=lambda x: x["total"])
    return j["buffers"], best["total"]


def main():
    args = sys.argv[1:]
    keep = None
    with_onnx = "--without-onnx" not in args
    args = [a for a in args if a != "--without-onnx"]
    if "--keep" in args:
        i = args.index("--keep")
        keep = args[i + 1]
        del args[i:i + 2]
    if not args:
        print(__doc__)
        return 2
    cli = args[0]
    shared = args[1] if len(args) > 1 else os.environ.get("TENSORMEM_SHARED_DIR", "")
    browser = chromium()
    if not browser:
        print("SKIP: chromium not found (Debian: apt-get install chromium)")
        return SKIP
    work = keep or tempfile.mkdtemp(prefix="tensormem_html_")
    os.makedirs(work, exist_ok=True)
    failures = []
    # A generated problem (always there): 3,000 buffers.
    csv = os.path.join(work, "generated.csv")
    with open(csv, "w") as f:
        f.write("id,lower,upper,size\n")
        x = 12345
        for i in range(3000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            lo = x % 2000
            f.write(f"b{i},{lo},{lo + 1 + (x >> 8) % 60},{64 * (1 + (x >> 14) % 500)}\n")
    html = os.path.join(work, "generated.html")
    buffers, total = plan_figures(cli, csv, html)
    failures += check_map(browser, html, buffers, total, os.path.join(work, "generated.png"), "generated")
    model = os.path.join(shared, "models", "resnet50.onnx") if shared else ""
    if not with_onnx:
        print("note: this tensormem has no ONNX importer; the shared model was not planned")
    elif os.path.exists(model):
        html = os.path.join(work, "resnet50.html")
        buffers, total = plan_figures(cli, model, html)
        failures += check_map(browser, html, buffers, total, os.path.join(work, "resnet50.png"), "resnet50")
    else:
        print("note: the shared resnet50 model is absent; only the generated problem was checked")
    trace = os.path.join(shared, "traces", "resnet18_train_b8.csv") if shared else ""
    if os.path.exists(trace):
        html = os.path.join(work, "replay.html")
        r = subprocess.run([cli, "replay", trace, "-a", "bfc", "-r", "1", "--json", "--html", html],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            failures.append(f"tensormem replay --html failed: {r.stderr}")
        else:
            allocations = json.loads(r.stdout)["allocations"]
            dom, _ = run_chromium(browser, ["--dump-dom", "file://" + os.path.abspath(html)])
            s = summary(dom.stdout)
            print(f"replay: {os.path.getsize(html):,} bytes, summary {s}")
            if s.get("buffers") != str(allocations):
                failures.append(f"replay: page says {s.get('buffers')} buffers, the trace has {allocations}")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
