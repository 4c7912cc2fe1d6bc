#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs every example a user would copy from README.md and docs/, so the
documentation cannot drift from the code.

- ```sh blocks run with bash (-e -o pipefail); ```python blocks with python3.
- Each block runs in a scratch folder where `examples/` is the repository's
  examples folder and `../shared` the shared data folder; `tensormem` is on
  PATH and `import tensormem` works. Blocks of one page share the folder, in
  page order, so a later block may read what an earlier one wrote.
- A block preceded by `<!-- doctest: skip: REASON -->` is not run (installs,
  builds, GPUs, minutes-long benchmarks); it is counted with its reason.
- A block that names ../shared is skipped when the shared folder is absent,
  and one that reads an ONNX model when the build has no ONNX importer
  (--no-onnx).

Usage: doc_test.py --source DIR --cli PATH [--pythonpath DIR] [--shared DIR]
                   [--list] [FILE.md ...]
Exit 0 when every block that ran passed (77 when nothing ran: CTest skip).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
SKIP = re.compile(r"<!--\s*doctest:\s*skip:\s*(.*?)\s*-->")
RUN_LANGUAGES = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "py": "python"}
BLOCK_TIMEOUT_S = 180


class Block:
    def __init__(self, path, line, language, text, skip):
        self.path, self.line, self.language, self.text, self.skip = path, line, language, text, skip

    def where(self, source):
        return f"{os.path.relpath(self.path, source)}:{self.line}"


def blocks_of(path):
    """The fenced blocks of one Markdown file, with the skip marker that
    stands on the last non-blank line before each fence."""
    out, lines = [], open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, language, start = m.group(1), m.group(2).lower(), i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j]]
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip = SKIP.search(lines[k]) if k >= 0 else None
        if language in RUN_LANGUAGES:
            out.append(Block(path, start + 1, RUN_LANGUAGES[language], "\n".join(body) + "\n",
                             skip.group(1) if skip else None))
        i = j + 1
    return out


def markdown_files(source):
    files = [os.path.join(source, "README.md")]
    for root, _, names in os.walk(os.path.join(source, "docs")):
        files += [os.path.join(root, n) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.exists(f))


def scratch_folder(source, shared, cli):
    """work/ (the blocks' folder) with examples/ linked in, shared/ beside
    it as ../shared, and bin/tensormem on PATH."""
    top = tempfile.mkdtemp(prefix="tensormem_doc_test_")
    work, bin_dir = os.path.join(top, "work"), os.path.join(top, "bin")
    os.makedirs(work)
    os.makedirs(bin_dir)
    os.symlink(os.path.join(source, "examples"), os.path.join(work, "examples"))
    if shared and os.path.isdir(shared):
        os.symlink(os.path.abspath(shared), os.path.join(top, "shared"))
    os.symlink(os.path.abspath(cli), os.path.join(bin_dir, "tensormem"))
    # `python3` in a shell block is the interpreter the package was built for.
    os.symlink(sys.executable, os.path.join(bin_dir, "python3"))
    return top, work, bin_dir


def run_block(block, work, env):
    if block.language == "sh":
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    else:
        argv = [sys.executable, "-c", block.text]
    started = time.monotonic()
    try:
        r = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=BLOCK_TIMEOUT_S)
        ok, output = r.returncode == 0, f"exit {r.returncode}\n{r.stdout}{r.stderr}"
    except subprocess.TimeoutExpired as e:
        ok, output = False, f"timed out after {BLOCK_TIMEOUT_S} s\n{e.stdout or ''}{e.stderr or ''}"
    return ok, output, time.monotonic() - started


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--pythonpath", default="")
    ap.add_argument("--shared", default="")
    ap.add_argument("--no-onnx", action="store_true", help="the build has no ONNX importer")
    ap.add_argument("--list", action="store_true", help="list the blocks and their status, run nothing")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    # (An empty argument is what CMake passes for a generator expression that is off.)
    files = [os.path.abspath(f) for f in args.files if f] or markdown_files(source)
    have_shared = bool(args.shared) and os.path.isdir(args.shared)
    have_python = bool(args.pythonpath) and os.path.isdir(os.path.join(args.pythonpath, "tensormem"))

    ran = passed = 0
    skipped, failures = {}, []
    for path in files:
        top, work, bin_dir = scratch_folder(source, args.shared, args.cli)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                   PYTHONPATH=args.pythonpath, TENSORMEM_SHARED_DIR=os.path.join(top, "shared"))
        try:
            for block in blocks_of(path):
                reason = block.skip
                if reason is None and "../shared" in block.text and not have_shared:
                    reason = "the shared data folder is absent"
                if reason is None and args.no_onnx and (".onnx" in block.text or "_onnx(" in block.text):
                    reason = "this build has no ONNX importer"
                if reason is None and block.language == "python" and not have_python:
                    reason = "the Python package is not built"
                if reason is not None:
                    skipped.setdefault(reason, []).append(block.where(source))
                    continue
                if args.list:
                    print(f"run  {block.where(source)} ({block.language})")
                    continue
                ran += 1
                ok, output, seconds = run_block(block, work, env)
                print(f"{'ok  ' if ok else 'FAIL'} {block.where(source)} ({block.language}, {seconds:.1f} s)")
                if ok:
                    passed += 1
                else:
                    failures.append((block, output))
        finally:
            shutil.rmtree(top, ignore_errors=True)

    for reason, where in sorted(skipped.items()):
        print(f"skipped {len(where)} ({reason}): {', '.join(where)}")
    for block, output in failures:
        print(f"\n--- {block.where(source)} failed:\n{block.text}--- output:\n{output[-4000:]}")
    print(f"doc test: {ran} blocks run, {passed} passed, {len(failures)} failed, "
          f"{sum(len(w) for w in skipped.values())} skipped")
    if failures:
        return 1
    return 0 if ran or args.list else 77


if __name__ == "__main__":
    sys.exit(main())
