#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every relative link in README.md, CHANGELOG.md and docs/ points at a file
that exists and, for `page.md#anchor`, at a heading of that page (anchors as
GitHub makes them: lower case, punctuation dropped, spaces to hyphens).

Usage: links_test.py SOURCE_DIR
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")


def slug(heading):
    text = re.sub(r"[`*]|<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path):
    """The lines outside fenced code blocks, numbered from 1."""
    inside = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def pages(source):
    out = [os.path.join(source, n) for n in ("README.md", "CHANGELOG.md")]
    for root, _, names in os.walk(os.path.join(source, "docs")):
        out += [os.path.join(root, n) for n in names if n.endswith(".md")]
    return sorted(p for p in out if os.path.exists(p))


def main():
    source = os.path.abspath(sys.argv[1])
    broken, count = [], 0
    for page in pages(source):
        for number, line in prose_lines(page):
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                count += 1
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = f"{os.path.relpath(page, source)}:{number}"
                if not os.path.exists(full):
                    broken.append(f"{where}: {target}: no such file")
                elif anchor and full.endswith(".md") and anchor not in anchors(full):
                    broken.append(f"{where}: {target}: no heading #{anchor} in {os.path.relpath(full, source)}")
    for b in broken:
        print(b)
    print(f"links: {count} relative links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
