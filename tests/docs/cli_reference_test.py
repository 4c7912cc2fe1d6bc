#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keeps docs/reference/cli.md in step with `tensormem SUB --help`.

For every subcommand `tensormem --help` lists, every long option that
`tensormem SUB --help` prints must appear in the options table of cli.md's
section for SUB (the `## tensormem SUB` heading up to the next `## `), and
every long option that table lists must exist in --help. Options are read
from the first column of the tables only, so prose may name any option.

Usage: cli_reference_test.py TENSORMEM_BINARY docs/reference/cli.md
Exit 0 when both agree, 1 with the missing options listed per subcommand.
"""
import re
import subprocess
import sys

LONG_OPTION = re.compile(r"--[a-z0-9][a-z0-9-]*")
# Every subcommand has --help; cli.md says so once instead of per table.
IGNORED = {"--help"}


def run_help(binary, *args):
    done = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} --help: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def subcommands(binary):
    """The names under the top-level help's "Subcommands:" heading."""
    names, inside = [], False
    for line in run_help(binary).splitlines():
        if re.match(r"^subcommands:\s*$", line.strip(), re.IGNORECASE):
            inside = True
        elif inside and re.match(r"^  [a-z][a-z0-9_-]*(\s|$)", line):
            names.append(line.split()[0])  # a wrapped description is indented further
        elif inside and line.strip() and not line.startswith("   "):
            inside = False
    if not names:
        sys.exit("tensormem --help lists no subcommands: has CLI11's help format changed?")
    return names


def help_options(binary, sub):
    """Long options in the option column of `tensormem SUB --help`.

    CLI11 prints one option per line, indented by two spaces, its names
    first and without spaces ("  -s,--strategy TEXT=best  meaning"); a
    description on the next line is indented further, and descriptions may
    name other options, so only that first word of such a line counts.
    """
    found = set()
    for line in run_help(binary, sub).splitlines():
        if line.startswith("  -"):
            found.update(LONG_OPTION.findall(line.split()[0]))
    return found - IGNORED


def doc_sections(text):
    """{subcommand: set of long options in the first column of its tables}."""
    sections, current = {}, None
    for line in text.splitlines():
        heading = re.match(r"^##\s+`?tensormem\s+([a-z][a-z0-9-]*)`?\s*$", line)
        if heading:
            current = sections.setdefault(heading.group(1), set())
        elif line.startswith("## "):
            current = None
        elif current is not None and line.startswith("|"):
            first_cell = line.strip().strip("|").split("|")[0]
            current.update(LONG_OPTION.findall(first_cell))
    return {sub: opts - IGNORED for sub, opts in sections.items()}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, doc_path = sys.argv[1], sys.argv[2]
    with open(doc_path, encoding="utf-8") as f:
        documented = doc_sections(f.read())
    problems = []
    for sub in subcommands(binary):
        in_help = help_options(binary, sub)
        if sub not in documented:
            problems.append(f"{doc_path}: no section '## tensormem {sub}' (its options: "
                            f"{', '.join(sorted(in_help)) or 'none'})")
            continue
        in_doc = documented[sub]
        missing = sorted(in_help - in_doc)
        stale = sorted(in_doc - in_help)
        if missing:
            problems.append(f"tensormem {sub}: in --help but not in {doc_path}: {', '.join(missing)}")
        if stale:
            problems.append(f"tensormem {sub}: in {doc_path} but not in --help: {', '.join(stale)}")
        print(f"tensormem {sub}: {len(in_help)} options in --help, {len(in_doc)} in the reference")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("Update docs/reference/cli.md (one table row per option) to match --help.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
