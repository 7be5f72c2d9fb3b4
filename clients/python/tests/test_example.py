"""examples/agent_loop.py runs to its end: denial, scripted approval, retry,
success (it exits 1 when any step goes otherwise)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from .support import HERE, REPO, sbx_binary


class ExampleTest(unittest.TestCase):
    def test_agent_loop(self):
        example = os.path.join(HERE, "..", "examples", "agent_loop.py")
        env = dict(os.environ, SBX=sbx_binary())
        p = subprocess.run([sys.executable, example], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("1 denial(s)", out)
        self.assertIn("via grant", out)


    def test_readme_example(self):
        """The README's example is examples/readme.py, word for word, and it
        runs: a shell call denied, its retry's grant applied, the call again."""
        example = os.path.join(HERE, "..", "examples", "readme.py")
        with open(example) as f:
            code = f.read()
        # The client's README, and the repository's where the checkout is whole
        # (test.sh's copy for sbxtest holds clients/python only).
        readmes = [os.path.join(HERE, "..", "README.md")]
        if os.path.exists(os.path.join(REPO, "README.md")):
            readmes.append(os.path.join(REPO, "README.md"))
        for readme in readmes:
            with open(readme) as f:
                self.assertIn("```python\n" + code + "```", f.read(), f"{readme}'s example is not examples/readme.py")
        tmp = tempfile.mkdtemp(prefix="sbx-pyreadme-")
        os.chmod(tmp, 0o755)
        self.addCleanup(shutil.rmtree, tmp, True)
        # The example imports the package as installed; here, from this checkout.
        env = dict(os.environ, SBX=sbx_binary(), TMPDIR=tmp, PYTHONPATH=os.path.join(HERE, ".."))
        p = subprocess.run([sys.executable, example], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode()
        m = re.search(r"denied: create (/var/tmp/\S+)/note \(", out)
        if m:
            self.addCleanup(shutil.rmtree, m.group(1), True)
        self.assertEqual(p.returncode, 0, out)
        self.assertTrue(m, out)
        self.assertIn("the user allows: {'file_system': {'write': ['" + m.group(1) + "']}}", out)
        self.assertIn("exit 0 note: hi", out)


if __name__ == "__main__":
    unittest.main()
