#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CTest's entry to the Python tests: pytest on the given folder, with the
built package on PYTHONPATH (set by CMake). Exit 77 (CTest: skipped) with the
reason when pytest or NumPy is missing; pytest's exit 5 (no tests collected)
is a failure here, never a silent pass."""
import subprocess
import sys
import time

for module, package in (("pytest", "python3-pytest"), ("numpy", "python3-numpy")):
    try:
        __import__(module)
    except ImportError:
        print(f"SKIP: {module} is not installed for {sys.executable} (Debian: {package})")
        sys.exit(77)

start = time.perf_counter()
rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sys.argv[1:]])
print(f"pytest: exit {rc} in {time.perf_counter() - start:.2f} s")
if rc == 5:
    print("FAIL: pytest collected no tests (is the folder right?)")
    sys.exit(1)
sys.exit(rc)
