"""sbx.Server against the real ``sbx serve``: a denial and its grant in one
session, streaming, the typed errors, concurrent calls, shutdown."""

import os
import shutil
import tempfile
import threading
import unittest

import sbx

from .support import sbx_binary


class _Dirs(unittest.TestCase):
    """A workspace, and a directory outside it that anyone may write."""

    @classmethod
    def setUpClass(cls):
        cls.bin = sbx_binary()

    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="sbx-pyserve-")
        os.chmod(self.ws, 0o755)
        self.addCleanup(shutil.rmtree, self.ws, True)
        self.out = tempfile.mkdtemp(prefix="sbx-pyserve-out-", dir="/var/tmp")
        os.chmod(self.out, 0o777)
        self.addCleanup(shutil.rmtree, self.out, True)


class ServerTest(_Dirs):
    def setUp(self):
        super().setUp()
        self.srv = sbx.Server(sbx=self.bin, args=["--ephemeral"], timeout=60)
        self.addCleanup(self.srv.close)

    def test_denial_then_turn_grant(self):
        self.assertEqual(self.srv.info["protocol_version"], "1")
        s = self.srv.open_session(self.ws, session_id="s1", preset="auto")
        turn = self.srv.begin_turn(s)
        target = os.path.join(self.out, "f")
        req = {"command": ["sh", "-c", f"echo inside > in.txt; echo out > {target}"], "cwd": self.ws}
        r = self.srv.exec(s, turn, "c1", req)
        self.assertNotEqual(r.exit_code, 0)
        self.assertTrue(r.denied, r.raw)
        self.assertFalse(os.path.exists(target))
        with open(os.path.join(self.ws, "in.txt")) as f:
            self.assertEqual(f.read(), "inside\n")
        want = {"file_system": {"write": [self.out]}}
        self.srv.apply_grant(s, want, want, scope="turn")
        r = self.srv.exec(s, turn, "c2", req)
        self.assertEqual(r.exit_code, 0, r.raw)
        with open(target) as f:
            self.assertEqual(f.read(), "out\n")
        # The grant ends with its turn.
        self.srv.end_turn(s, turn)
        os.remove(target)
        r = self.srv.exec(s, self.srv.begin_turn(s), "c3", req)
        self.assertTrue(r.denied)
        self.assertFalse(os.path.exists(target))

    def test_streamed_output(self):
        s = self.srv.open_session(self.ws, preset="auto")
        turn = self.srv.begin_turn(s)
        events = []
        r = self.srv.exec(s, turn, "c1", {"command": ["sh", "-c", "echo one; echo two >&2"], "cwd": self.ws},
                          on_output=events.append)
        self.assertEqual(r.exit_code, 0)
        got = {(e["stream"], e["data"]) for e in events if e.get("event") == "output"}
        self.assertEqual(got, {("stdout", "one\n"), ("stderr", "two\n")})
        self.assertTrue(all(e["call_id"] == "c1" for e in events))

    def test_fs_change(self):
        s = self.srv.open_session(self.ws, preset="auto")
        turn = self.srv.begin_turn(s)
        r = self.srv.exec(s, turn, "c1", {"fs": {"op": "write", "path": "notes.txt", "content": "hi\n"}, "cwd": self.ws})
        self.assertIsInstance(r, sbx.FsResult)
        self.assertTrue(r.ok, r.raw)
        r = self.srv.exec(s, turn, "c2", {"fs": {"op": "write", "path": os.path.join(self.out, "n"), "content": "x"}, "cwd": self.ws})
        self.assertTrue(r.denied, r.raw)
        self.assertFalse(os.path.exists(os.path.join(self.out, "n")))

    def test_errors_are_typed(self):
        with self.assertRaises(sbx.ServerError) as e:
            self.srv.begin_turn("nope")
        self.assertEqual(e.exception.kind, "unknown_session")
        s = self.srv.open_session(self.ws, preset="auto")
        with self.assertRaises(sbx.ServerError) as e:
            self.srv.exec(s, "t-none", "c1", {"command": ["true"], "cwd": self.ws})
        self.assertEqual(e.exception.kind, "no_open_turn")
        turn = self.srv.begin_turn(s)
        with self.assertRaises(sbx.ServerError) as e:
            self.srv.exec(s, turn, "c2", {"command": ["true"], "cwd": self.ws, "SANDBOX_MODE": "danger-full-access"})
        self.assertEqual(e.exception.kind, "invalid_params")
        # No answerer: an escalation is denied, unavailable.
        with self.assertRaises(sbx.ServerError) as e:
            self.srv.exec(s, turn, "c3", {"command": ["true"], "cwd": self.ws, "sandbox_permissions": "with_additional_permissions",
                                          "justification": "test", "additional_permissions": {"network": {"enabled": True}}})
        self.assertEqual((e.exception.kind, e.exception.outcome), ("denied", "unavailable"))

    def test_close_session(self):
        s = self.srv.open_session(self.ws, preset="auto")
        self.srv.begin_turn(s)
        self.assertIsNone(self.srv.close_session(s))
        for call in (lambda: self.srv.permissions(s), lambda: self.srv.close_session(s)):
            with self.assertRaises(sbx.ServerError) as e:
                call()
            self.assertEqual(e.exception.kind, "unknown_session")
        with self.assertRaises(sbx.ServerError) as e:
            self.srv.close_session("")
        self.assertEqual(e.exception.kind, "invalid_params")

    def test_concurrent_calls_from_threads(self):
        s = self.srv.open_session(self.ws, preset="auto")
        turn = self.srv.begin_turn(s)
        results = {}

        def one(i):
            results[i] = self.srv.exec(s, turn, f"c{i}", {"command": ["sh", "-c", f"echo {i}"], "cwd": self.ws})

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual({i: r.stdout for i, r in results.items()}, {i: f"{i}\n" for i in range(6)})

    def test_close_shuts_down(self):
        self.assertEqual(self.srv.close(), 0)
        with self.assertRaises(sbx.ProtocolError):
            self.srv.open_session(self.ws)


if __name__ == "__main__":
    unittest.main()


class ServerApprovalTest(_Dirs):
    """on_approval answers the server's approval/requested."""

    def escalate(self, answer):
        asked = []

        def on_approval(params):
            asked.append(params)
            return answer

        with sbx.Server(sbx=self.bin, args=["--ephemeral"], timeout=60, on_approval=on_approval) as srv:
            s = srv.open_session(self.ws, preset="auto")
            turn = srv.begin_turn(s)
            target = os.path.join(self.out, "f")
            req = {"command": ["touch", target], "cwd": self.ws, "sandbox_permissions": "with_additional_permissions",
                   "justification": "write the build output",
                   "additional_permissions": {"file_system": {"write": [self.out]}}}
            try:
                r = srv.exec(s, turn, "c1", req)
            except sbx.ServerError as e:
                r = e
        return asked, r, os.path.exists(target)

    def test_allowed_once_runs(self):
        asked, r, made = self.escalate("allowed-once")
        self.assertEqual(len(asked), 1)
        self.assertEqual((asked[0]["call_id"], asked[0]["command"][0]), ("c1", "touch"))
        self.assertIsInstance(r, sbx.ExecResult)
        self.assertEqual(r.exit_code, 0, r.raw)
        self.assertTrue(made)

    def test_rejected_and_bad_answers_do_not_run(self):
        for answer in ("rejected", "cancelled", "yes"):
            asked, r, made = self.escalate(answer)
            self.assertEqual(len(asked), 1, answer)
            self.assertIsInstance(r, sbx.ServerError, answer)
            self.assertEqual((r.kind, r.outcome), ("denied", "rejected"), answer)
            self.assertFalse(made, answer)
