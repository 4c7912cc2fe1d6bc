#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compiles every source of a build's compile database with clang 14,
syntax only, warnings as errors (issue 12 item 19: Debian 12's default
clang is 14, which rejects, e.g., a lambda capturing a structured binding
that GCC 12+ and clang 16 accept). Benchmarks and fuzzers are left out.

  scripts/check_clang14.py BUILD_DIR [--jobs N]
Exit 1 listing the files that failed; 0 when clang++-14 is absent (said).
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    clang = shutil.which("clang++-14")
    if clang is None:
        print("tensormem: clang++-14 not found: the clang 14 check is skipped")
        return 0
    db = os.path.join(a.build, "compile_commands.json")
    if not os.path.exists(db):
        print(f"{db}: missing (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)", file=sys.stderr)
        return 1
    jobs = []
    for entry in json.load(open(db)):
        source = entry["file"]
        if "/bench/" in source or "/fuzz/" in source:
            continue
        args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
        cmd, skip = [clang], False
        for x in args[1:]:
            if skip:
                skip = False
            elif x in ("-o", "-MF", "-MT", "-MQ"):
                skip = True
            elif x not in ("-MD", "-MMD") and not x.startswith("-fdiagnostics-color"):
                cmd.append(x)
        jobs.append((source, entry["directory"], cmd + ["-fsyntax-only"]))

    def run(job):
        source, cwd, cmd = job
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        return source, p.returncode, p.stderr

    failed = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for source, rc, err in pool.map(run, jobs):
            if rc != 0:
                failed.append(source)
                print(err[:2000], file=sys.stderr)
    print(f"clang 14 syntax check: {len(jobs)} sources, {len(failed)} failed")
    for f in failed:
        print("  " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
