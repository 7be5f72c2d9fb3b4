"""The README's install from a checkout works offline: a venv, ``pip install
--no-index --no-build-isolation`` of clients/python (PyPI is not reachable
here), and the README's example runs with the venv's python, importing the
installed package (py.typed with it), nothing of the checkout. The wheel of
the release build is checked the same way by release/clients_test.go."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from .support import HERE, sbx_binary

PACKAGE = os.path.normpath(os.path.join(HERE, ".."))


def _debian_python():
    """A python3 whose setuptools can build a wheel without PyPI and whose pip
    can install it into a venv (Debian's, with python3-pip, python3-wheel and
    python3-venv), or None."""
    for py in ("/usr/bin/python3", sys.executable):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import setuptools, wheel, venv, pip"], stderr=subprocess.DEVNULL, check=False).returncode == 0:
            return py
    return None


class InstallTest(unittest.TestCase):
    def test_pip_install_from_the_checkout(self):
        py = _debian_python()
        if py is None:
            self.skipTest("no python3 with setuptools, wheel and venv (Debian: python3-wheel python3-venv; .ci/run installs them)")
        tmp = tempfile.mkdtemp(prefix="sbx-pyinstall-")
        os.chmod(tmp, 0o755)
        self.addCleanup(shutil.rmtree, tmp, True)
        # The venv sees the system's pip, setuptools and wheel (--system-site-packages;
        # --without-pip spares the copy ensurepip would make). pip builds in the
        # source tree (build/, *.egg-info): a copy keeps the checkout clean.
        src = os.path.join(tmp, "src")
        shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
        venv = os.path.join(tmp, "venv")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and not k.startswith("PIP_")}
        subprocess.run([py, "-m", "venv", "--system-site-packages", "--without-pip", venv], check=True, env=env)
        vpy = os.path.join(venv, "bin", "python")
        p = subprocess.run([vpy, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", src],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300, check=False)
        self.assertEqual(p.returncode, 0, p.stdout.decode())
        p = subprocess.run([vpy, "-c", "import os, sbx; print(os.path.dirname(sbx.__file__))"],
                           stdout=subprocess.PIPE, cwd=tmp, env=env, check=True)
        where = p.stdout.decode().strip()
        self.assertTrue(where.startswith(venv), where)
        self.assertTrue(os.path.exists(os.path.join(where, "py.typed")), where)
        env.update(SBX=sbx_binary(), TMPDIR=tmp)
        p = subprocess.run([vpy, os.path.join(src, "examples", "readme.py")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, cwd=tmp, env=env, timeout=120, check=False)
        out = p.stdout.decode()
        m = re.search(r"denied: create (/var/tmp/\S+)/note \(", out)
        if m:
            self.addCleanup(shutil.rmtree, m.group(1), True)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("exit 0 note: hi", out)


if __name__ == "__main__":
    unittest.main()
