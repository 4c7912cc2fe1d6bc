#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file of the project carries an SPDX license line.

  scripts/spdx.py          check: list the files without one, exit 1 if any
  scripts/spdx.py --add    add `SPDX-License-Identifier: Apache-2.0` where missing

Source files are the ones git tracks with these endings (C++, Python, shell,
CMake); the line goes first, after a shebang line where there is one.
"""
import os
import subprocess
import sys

LICENSE = "Apache-2.0"
COMMENT = {".cc": "//", ".h": "//", ".cpp": "//", ".hpp": "//", ".in": None, ".py": "#", ".pyi": "#",
           ".sh": "#", ".cmake": "#", "CMakeLists.txt": "#"}


def comment_of(path):
    name = os.path.basename(path)
    if name == "CMakeLists.txt":
        return "#"
    if name == "version.h.in":
        return None  # generated header: its own SPDX line is inside
    return COMMENT.get(os.path.splitext(name)[1])


def source_files(root):
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for path in out.decode().split("\0"):
        if path and comment_of(path) and os.path.isfile(os.path.join(root, path)):
            yield path


def has_line(text):
    return "SPDX-License-Identifier:" in "\n".join(text.splitlines()[:5])


def add_line(text, comment):
    line = f"{comment} SPDX-License-Identifier: {LICENSE}\n"
    if text.startswith("#!"):
        first, _, rest = text.partition("\n")
        return first + "\n" + line + rest
    return line + text


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    add = "--add" in sys.argv[1:]
    missing = []
    for path in source_files(root):
        full = os.path.join(root, path)
        text = open(full, encoding="utf-8").read()
        if has_line(text):
            continue
        missing.append(path)
        if add:
            with open(full, "w", encoding="utf-8") as f:
                f.write(add_line(text, comment_of(path)))
    if missing and not add:
        print(f"{len(missing)} source files have no SPDX-License-Identifier line "
              f"(scripts/spdx.py --add adds it):\n  " + "\n  ".join(missing))
        return 1
    print(f"spdx: {'added to ' + str(len(missing)) if add else 'every source file has'} "
          f"an SPDX-License-Identifier line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
