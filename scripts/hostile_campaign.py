#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile-input campaign against the tensormem CLI (issue 12).

Derives COUNT inputs from valid seeds (CSV and JSON problems, a replay trace,
an ONNX model) by deterministic mutations (seeded): byte flips, cuts,
insertions, hostile numbers (negative, 2^64, 300 digits, nan), bytes that are
not UTF-8, NUL bytes, long lines (up to megabytes), a quote never closed
before thousands of lines, CRLF, gzip (whole, truncated, or followed by bytes
that are not gzip); and an ONNX path that is a FIFO no one writes. Runs every
subcommand that reads that kind of input and tallies the exit codes; the SVG
maps written must be well-formed XML.

A case fails when the process dies by a signal, runs past the timeout, exits
with a code its subcommand does not document (0/1/2; solve also 3/4) or
other than 2 on data after a gzip member, prints
a sanitizer report, an uncaught exception or an "internal error", changes
its input file, or writes an SVG that is not well-formed. Exit status 1 when any case failed; the failures are listed.

  scripts/hostile_campaign.py --cli build/tools/tensormem/tensormem --count 4000
"""
import argparse
import collections
import concurrent.futures
import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

HOSTILE_NUMBERS = [b"-1", b"-5", b"0", b"18446744073709551615", b"18446744073709551616",
                   b"99999999999999999999999", b"9" * 300, b"1e30", b"nan", b"inf", b"0x10",
                   b"4611686018427387904", b"-9223372036854775808", b" 7", b"3.5", b""]
HOSTILE_BYTES = [b"\xff", b"\xfe\xff", b"\x00", b"\r\n", b"\n\n", b",", b"\"", b"{", b"]",
                 b"\xc3\x28", b"\t", b"\\u0000", b"\x1f\x8b"]

SEED_CSV = b"id,lower,upper,size,alignment,offset\na,0,2,4,,\nb,1,3,4,16,\nc,2,4,4,,32\nd,3,5,4,,\ne,0,1,8,,\n"
SEED_JSON = (b'{"capacity": 64, "buffers": [{"id": "a", "lower": 0, "upper": 3, "size": 4},'
             b' {"id": "b", "lower": 2, "upper": 6, "size": 8, "alignment": 8},'
             b' {"id": "c", "begin": 3, "end": 8, "size": 4, "offset": 16,'
             b' "gaps": [{"lower": 4, "upper": 6, "window": [0, 2]}]}]}')
SEED_TRACE = (b"Thread,Time,Action,Pointer,Size,Stream\n0,1,allocate,0x1000,1008,0\n"
              b"0,2,allocate,0x2000,240,0\n0,3,free,0x1000,1008,0\n0,4,allocate,0x3000,4096,0\n"
              b"0,5,free,0x2000,240,0\n0,6,free,0x3000,4096,0\n")

# Per input kind: the subcommands that read it, and the exit codes they document.
COMMANDS = {
    "csv": [["plan", "{f}", "--svg", "{f}.svg"], ["plan", "{f}", "--objects"], ["plan", "{f}", "--strategy", "all"],
            ["solve", "{f}", "--time-limit", "1"], ["solve", "{f}", "--capacity", "20", "--iis", "--json"]],
    "json": [["plan", "{f}", "--json"], ["solve", "{f}", "--time-limit", "1", "--json"]],
    "trace": [["replay", "{f}", "-a", "vmm"], ["replay", "{f}", "-a", "bfc", "--json"]],
    "onnx": [["plan", "{f}"], ["records", "{f}"]],
}
ALLOWED = {"plan": {0, 1, 2}, "records": {0, 1, 2}, "replay": {0, 1, 2}, "solve": {0, 1, 2, 3, 4}}
BAD_OUTPUT = [b"AddressSanitizer", b"runtime error:", b"terminate called", b"internal error",
              b"LeakSanitizer", b"Segmentation fault"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    # Half the cases take one structure-keeping change (a hostile number, a
    # repeated line, CRLF), so they reach the planners, not only the readers.
    mild = rng.random() < 0.5
    for _ in range(1 if mild else rng.randint(1, 4)):
        op = rng.choice([3, 3, 3, 5, 7]) if mild else rng.randrange(11)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:  # cut
            del data[pos:pos + rng.randint(1, 16)]
        elif op == 2:  # hostile bytes
            data[pos:pos] = rng.choice(HOSTILE_BYTES)
        elif op == 3:  # a number replaced by a hostile one
            digits = [i for i, c in enumerate(data) if 0x30 <= c <= 0x39]
            if digits:
                i = rng.choice(digits)
                j = i
                while j < len(data) and 0x30 <= data[j] <= 0x39:
                    j += 1
                while i > 0 and 0x30 <= data[i - 1] <= 0x39:
                    i -= 1
                data[i:j] = rng.choice(HOSTILE_NUMBERS)
        elif op == 4:  # truncate
            del data[pos:]
        elif op == 5:  # duplicate a line (duplicate ids, repeated headers)
            lines = bytes(data).split(b"\n")
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            data = bytearray(b"\n".join(lines))
        elif op == 6:  # a long field
            data[pos:pos] = b"x" * rng.choice([1000, 70000])
        elif op == 7:  # CRLF line ends
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif op == 9:  # a quote never closed, then many lines (each once: linear time)
            data[pos:pos] = b'"' + b"\nx,1,2,3" * rng.choice([10, 200000])
        elif op == 10:  # a line of megabytes (zeros or NUL bytes), beyond the longest record
            data[pos:pos] = rng.choice([b"0", b"\0"]) * (3 << 20)
        else:  # swap two chunks
            a, b = sorted(rng.sample(range(len(data) + 1), 2)) if len(data) > 1 else (0, 0)
            data = data[:a] + data[b:] + data[a:b]
    return bytes(data)


def make_cases(count, seed, onnx_seed):
    rng = random.Random(seed)
    seeds = [("csv", ".csv", SEED_CSV), ("json", ".json", SEED_JSON), ("trace", ".csv", SEED_TRACE)]
    if onnx_seed is not None:
        seeds.append(("onnx", ".onnx", onnx_seed))
    for k in range(count):
        kind, ext, data = seeds[k % len(seeds)]
        body = mutate(data, rng)
        must_fail = False
        if kind != "onnx" and rng.random() < 0.15:  # gzip-compressed, whole or cut short
            body = gzip.compress(body, mtime=0)
            r = rng.random()
            if r < 0.4:
                body = body[:rng.randrange(len(body))]
            elif r < 0.6:  # plain bytes after the member: an error, never dropped
                body += rng.choice([b"x", b"c,0,1,4\n", b"\0\0\0\0"])
                must_fail = True
            ext += ".gz"
        yield k, kind, ext, body, must_fail


def run_case(cli, workdir, timeout, case):
    k, kind, ext, body, must_fail = case
    path = os.path.join(workdir, f"case{k}{ext}")
    with open(path, "wb") as f:
        f.write(body)
    digest = hashlib.sha256(body).hexdigest()
    results = []
    for template in COMMANDS[kind]:
        args = [a.replace("{f}", path) for a in template]
        sub = args[0]
        svg = path + ".svg" if "--svg" in template else None
        try:
            p = subprocess.run([cli] + args, capture_output=True, timeout=timeout, cwd=workdir)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, out = "timeout", b""
        problem = None
        if rc == "timeout":
            problem = f"ran past {timeout} s"
        elif rc < 0:
            problem = f"killed by signal {-rc}"
        elif rc not in ALLOWED[sub]:
            problem = f"undocumented exit code {rc}"
        elif must_fail and rc != 2:
            problem = f"exit {rc} on data after the gzip member (bad input: 2)"
        else:
            for bad in BAD_OUTPUT:
                if bad in out:
                    problem = "printed " + bad.decode()
                    break
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != digest:
                problem = (problem + "; " if problem else "") + "changed its input"
        if svg and os.path.exists(svg):
            try:
                ElementTree.parse(svg)
            except ElementTree.ParseError as e:
                problem = (problem + "; " if problem else "") + f"wrote an SVG that is not well-formed ({e})"
            os.unlink(svg)
        results.append((sub, " ".join(template), rc, problem, out[-400:]))
    os.unlink(path)
    return k, kind, body, results


def run_fifo_cases(cli, workdir, timeout):
    """An .onnx path that is a FIFO no one writes: refused as no regular file,
    without waiting for a writer. (sub, command, rc, problem, output) each."""
    fifo = os.path.join(workdir, "nobody_writes.onnx")
    os.mkfifo(fifo)
    results = []
    for sub in ("plan", "records"):
        try:
            p = subprocess.run([cli, sub, fifo], capture_output=True, timeout=timeout, cwd=workdir)
            rc, out = p.returncode, p.stdout + p.stderr
            problem = None if rc == 2 else f"exit {rc}, not 2"
        except subprocess.TimeoutExpired:
            rc, out, problem = "timeout", b"", f"waited past {timeout} s for a writer"
        results.append((sub, f"{sub} FIFO.onnx", rc, problem, out[-400:]))
    os.unlink(fifo)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--onnx", help="an ONNX model to mutate (default: examples/resnet18.onnx)")
    ap.add_argument("--json", action="store_true", help="print the tallies as one JSON object")
    a = ap.parse_args()
    a.cli = os.path.abspath(a.cli)
    if a.count < 1 or a.jobs < 1 or a.timeout <= 0:
        ap.error("--count and --jobs must be positive, --timeout above 0")
    onnx_path = a.onnx or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                       "resnet18.onnx")
    onnx_seed = open(onnx_path, "rb").read() if os.path.exists(onnx_path) else None

    tallies = collections.Counter()
    failures = []
    runs = 0
    with tempfile.TemporaryDirectory(prefix="tm-hostile-") as workdir:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futures = [pool.submit(run_case, a.cli, workdir, a.timeout, c)
                       for c in make_cases(a.count, a.seed, onnx_seed)]
            fifo = pool.submit(run_fifo_cases, a.cli, workdir, a.timeout)
            for sub, cmd, rc, problem, tail in fifo.result():
                runs += 1
                tallies[(sub, str(rc))] += 1
                if problem:
                    failures.append((-1, "fifo", cmd, problem, tail, b""))
            for fut in concurrent.futures.as_completed(futures):
                k, kind, body, results = fut.result()
                for sub, cmd, rc, problem, tail in results:
                    runs += 1
                    tallies[(sub, str(rc))] += 1
                    if problem:
                        failures.append((k, kind, cmd, problem, tail, body))
    for k, kind, cmd, problem, tail, body in sorted(failures)[:20]:
        print(f"FAIL case {k} ({kind}) `{cmd}`: {problem}\n  output: "
              f"{tail.decode(errors='replace')[-300:]!r}\n  input: {body[:300]!r}")

    by_sub = collections.defaultdict(dict)
    for (sub, rc), n in sorted(tallies.items()):
        by_sub[sub][rc] = n
    if a.json:
        print(json.dumps({"inputs": a.count, "runs": runs, "failures": len(failures), "exits": by_sub}))
    else:
        print(f"{a.count} inputs, {runs} runs, {len(failures)} failures (seed {a.seed})")
        for sub, codes in by_sub.items():
            print(f"  {sub:8s} " + ", ".join(f"exit {rc}: {n}" for rc, n in codes.items()))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
