# SPDX-License-Identifier: Apache-2.0
"""Builds tensormem._tensormem with CMake for `pip install .` (metadata in
pyproject.toml). Offline: uses the pybind11 and the compilers installed
(Debian: pybind11-dev, python3-dev); with --no-build-isolation pip uses the
installed setuptools too. TENSORMEM_CMAKE_ARGS adds CMake arguments; the
CMake build folder is build-pip/ (kept, so a second install is quick)."""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = ROOT / "build-pip"
        args = [
            "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}", "-DTENSORMEM_BUILD_PYTHON=ON",
            "-DTENSORMEM_BUILD_TESTS=OFF", "-DTENSORMEM_BUILD_BENCHMARKS=OFF",
            "-DTENSORMEM_BUILD_TOOLS=OFF",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        args += shlex.split(os.environ.get("TENSORMEM_CMAKE_ARGS", ""))
        subprocess.check_call(args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_tensormem", "-j", jobs])
        built = next((build / "python" / "tensormem").glob("_tensormem*.so"), None)
        if built is None:
            raise RuntimeError("the CMake build made no tensormem/_tensormem*.so (pybind11 or "
                               "Python development files missing? see the CMake output above)")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


setup(ext_modules=[CMakeExtension("tensormem._tensormem")], cmdclass={"build_ext": CMakeBuild})
