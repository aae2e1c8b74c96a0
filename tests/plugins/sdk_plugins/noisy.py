"""Noisy plugin for the SDK tests: writes to standard output every way it can, at import and
during a run, and reads standard input; none of it may reach the wire."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys

from benchbook.plugin import Plugin

print("import noise")
os.write(1, b"raw at import\n")

plugin = Plugin(id="sdk-noisy", name="Noisy", outputs={"stdin": "string", "child": "integer"})
libc = ctypes.CDLL(ctypes.util.find_library("c"))


@plugin.run
def run(ctx, inputs, config):
    print("noise")
    print("two\nlines")
    os.write(1, b"raw\n")
    libc.printf(b"printf %d\n", 42)
    libc.fflush(None)
    sys.stdout.buffer.write(b"buffer bytes\n")
    sys.__stdout__.write("dunder stdout\n")
    sys.__stdout__.flush()
    child = subprocess.run(["sh", "-c", "echo child-out; cat"], check=False)
    stolen = sys.stdin.read()
    print("no newline at the end", end="")
    return {"stdin": stolen, "child": child.returncode}
