"""Finds the real sbx binary for the tests: $SBX, else one built from this
checkout with go (the tests run the binary, never a fake)."""

import atexit
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
_built = None


def sbx_binary() -> str:
    global _built
    if os.environ.get("SBX"):
        return os.environ["SBX"]
    if _built:
        return _built
    if not shutil.which("go") or not os.path.isdir(os.path.join(REPO, "cmd", "sbx")):
        raise RuntimeError("no sbx binary: set $SBX (or run from the sbx checkout with go on PATH)")
    d = tempfile.mkdtemp(prefix="sbx-pytest-")
    atexit.register(shutil.rmtree, d, True)
    out = os.path.join(d, "sbx")
    subprocess.run(["go", "build", "-o", out, "./cmd/sbx"], cwd=REPO, check=True)
    _built = out
    return out
