#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The longest C++ functions under the given files or folders.

    scripts/function_lengths.py src/allocators harness tools python/src [--top 15] [--over 60]

Prints one line per function: lines, file:line, name (a class's member
functions are named Class::Member; lambdas count as part of the function
that holds them). With --over N it exits 1 when any function is longer than
N lines, so that CI can hold the line.

A brace counter, not a parser: comments, string and character literals are
blanked first; a `{` opens a function body when it closes a head that has a
parameter list and sits directly in a namespace, a class or the file (not in
another function: those are lambdas or blocks). Good enough for this code
base's style; a head it misreads is counted under a wrong name, never lost.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys
from typing import Iterator, List, NamedTuple

SUFFIXES = {".cc", ".cpp", ".cxx", ".h", ".hpp"}
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "requires"}


class Function(NamedTuple):
    lines: int
    path: str
    line: int
    name: str


def blank_comments_and_literals(text: str) -> str:
    """The text with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head: str) -> str | None:
    """The name of the function a head declares, or None when it is no function."""
    head = re.sub(r"\s+", " ", head).strip()
    if not head or head.startswith("#"):
        return None
    depth, paren = 0, -1
    for k, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            paren = k
            break
    if paren < 0:
        return None
    before = head[:paren].rstrip()
    m = re.search(r"((?:[A-Za-z_~][\w]*(?:<[^<>()]*>)?::)*(?:operator\s*\S+?|~?[A-Za-z_]\w*))$", before)
    if not m:
        return None
    name = m.group(1)
    if name.split("::")[-1] in CONTROL or "=" in before.replace("operator=", "").replace("==", ""):
        return None
    return name


def scopes(code: str) -> Iterator[tuple[int, int, str]]:
    """(start offset, end offset, name) of every function body in `code`."""
    stack: List[tuple[str, str, int]] = []  # (kind, name, head start)
    head_start = 0
    i = 0
    while i < len(code):
        c = code[i]
        if c == "{":
            head = code[head_start:i]
            in_function = any(kind == "function" for kind, _, _ in stack)
            kind, name = "block", ""
            if not in_function:
                words = re.sub(r"\s+", " ", head).strip()
                if re.match(r"^(inline )?namespace\b", words) or words.startswith('extern "'):
                    kind = "namespace"
                elif re.search(r"\b(class|struct|union|enum)\b", words) and "(" not in words.split(":")[0]:
                    kind = "class"
                    m = re.search(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+(?:::\w+)*)", words)
                    name = m.group(1) if m else ""
                else:
                    fn = function_name(head)
                    if fn:
                        kind, name = "function", fn
                        owner = next((n for k, n, _ in reversed(stack) if k == "class" and n), "")
                        if owner and "::" not in name:
                            name = owner + "::" + name
            start = head_start + (len(head) - len(head.lstrip()))
            stack.append((kind, name, start))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    yield start, i, name
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
        elif c == ":" and code.startswith("public:", max(i - 6, 0)) or code.startswith("private:", max(i - 7, 0)) \
                or code.startswith("protected:", max(i - 9, 0)):
            if c == ":":
                head_start = i + 1
        i += 1


def functions(path: pathlib.Path) -> Iterator[Function]:
    text = path.read_text(encoding="utf-8", errors="replace")
    code = blank_comments_and_literals(text)
    # Preprocessor lines are not heads.
    code = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), code)
    for start, end, name in scopes(code):
        first = code.count("\n", 0, start) + 1
        last = code.count("\n", 0, end) + 1
        yield Function(last - first + 1, str(path), first, name)


def files(roots: List[str]) -> Iterator[pathlib.Path]:
    for root in roots:
        p = pathlib.Path(root)
        if p.is_file():
            yield p
        else:
            yield from sorted(q for q in p.rglob("*") if q.suffix in SUFFIXES and q.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--top", type=int, default=15, help="how many to print (0: all)")
    ap.add_argument("--over", type=int, default=0, help="exit 1 when a function is longer than this")
    args = ap.parse_args()
    found = sorted((f for p in files(args.paths) for f in functions(p)), key=lambda f: (-f.lines, f.path, f.line))
    shown = found if args.top == 0 else found[: args.top]
    for f in shown:
        print(f"{f.lines:5d}  {f.path}:{f.line}  {f.name}")
    if args.over and any(f.lines > args.over for f in found):
        print(f"{sum(f.lines > args.over for f in found)} function(s) over {args.over} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
