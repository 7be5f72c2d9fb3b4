"""examples/agent_loop.py runs to its end: denial, scripted approval, retry,
success (it exits 1 when any step goes otherwise)."""

import os
import subprocess
import sys
import unittest

from .support import HERE, sbx_binary


class ExampleTest(unittest.TestCase):
    def test_agent_loop(self):
        example = os.path.join(HERE, "..", "examples", "agent_loop.py")
        env = dict(os.environ, SBX=sbx_binary())
        p = subprocess.run([sys.executable, example], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("1 denial(s)", out)
        self.assertIn("via grant", out)


if __name__ == "__main__":
    unittest.main()
