"""The client against the real sbx binary: denials, both retry paths, and
the typed errors of bad input."""

import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

import sbx

from .support import sbx_binary

# An approver answers one JSON question on stdout (docs/json.md "Approver
# request"); this one answers what $ANSWER says and logs the question.
APPROVER = """
import json, os, sys
q = json.load(sys.stdin)
with open(os.environ["QUESTION_LOG"], "w") as f:
    json.dump(q, f)
print(json.dumps({"outcome": os.environ["ANSWER"]}))
"""


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = sbx_binary()

    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="sbx-py-")
        os.chmod(self.ws, 0o755)
        self.addCleanup(shutil.rmtree, self.ws, True)

    def run_exec(self, req):
        return sbx.exec(req, sbx=self.bin, timeout=60)

    def test_denial_reported_and_grant_retry_succeeds(self):
        target = os.path.join(self.ws, "out.txt")
        req = sbx.ExecRequest(command=["sh", "-c", "echo hi > out.txt"], cwd=self.ws, sandbox_mode="read-only")
        r = self.run_exec(req)
        self.assertNotEqual(r.exit_code, 0)
        self.assertTrue(r.denied)
        self.assertEqual(r.denials[0].operation, "create")
        self.assertEqual(r.denials[0].path, target)
        self.assertFalse(os.path.exists(target), "the denied write happened")
        self.assertIsNotNone(r.retry)
        self.assertEqual(r.retry.grant.file_system.write, [self.ws])

        again = self.run_exec(req.with_grant(r.retry.grant))
        self.assertEqual(again.exit_code, 0, again.stderr)
        self.assertEqual(again.denials, [])
        self.assertEqual(again.permissions.via, "grant")
        with open(target) as f:
            self.assertEqual(f.read(), "hi\n")

    def test_session_grant_keeps_turn_grant(self):
        req = sbx.ExecRequest(command=["true"], cwd=self.ws).with_grant(
            sbx.Profile(file_system=sbx.FileSystemPermissions(read=["/opt"])), scope="session"
        )
        req = req.with_grant(sbx.Profile(file_system=sbx.FileSystemPermissions(write=[self.ws])))
        req = req.with_grant(sbx.Profile(file_system=sbx.FileSystemPermissions(write=[self.ws, "/var/tmp"])))
        self.assertEqual(req.grants.session.file_system.read, ["/opt"])
        self.assertEqual(req.grants.turn.file_system.write, [self.ws, "/var/tmp"])
        with self.assertRaises(ValueError):
            req.with_grant(sbx.Profile(), scope="forever")

    def approver(self, answer):
        # Outside the workspace: the approver's files must not be what the
        # command's write is judged on.
        d = tempfile.mkdtemp(prefix="sbx-py-approver-")
        self.addCleanup(shutil.rmtree, d, True)
        script = os.path.join(d, "approver.py")
        with open(script, "w") as f:
            f.write(APPROVER)
        os.chmod(script, stat.S_IRWXU)
        log = script + ".question.json"
        return [sys.executable, script], {"ANSWER": answer, "QUESTION_LOG": log}, log

    def test_retry_request_with_an_approver(self):
        req = sbx.ExecRequest(command=["sh", "-c", "echo ok > out.txt"], cwd=self.ws, call_id="call-1")
        r = self.run_exec(req)
        self.assertTrue(r.denied)

        retry = sbx.ExecRequest.from_dict(r.retry.request)
        self.assertEqual(retry.sandbox_permissions, "with_additional_permissions")
        retry.justification = "write the test output"

        # Under the default approval policy never, nobody is asked.
        with self.assertRaises(sbx.DeniedByPolicyError) as cm:
            self.run_exec(retry)
        self.assertEqual(cm.exception.outcome, "never")
        self.assertFalse(os.path.exists(os.path.join(self.ws, "out.txt")))

        argv, env, log = self.approver("rejected")
        retry.approval_policy = "on-request"
        retry.approver = ["env"] + [f"{k}={v}" for k, v in env.items()] + argv
        with self.assertRaises(sbx.DeniedByPolicyError) as cm:
            self.run_exec(retry)
        self.assertEqual(cm.exception.outcome, "rejected")
        self.assertFalse(os.path.exists(os.path.join(self.ws, "out.txt")))

        argv, env, log = self.approver("allowed-once")
        retry.approver = ["env"] + [f"{k}={v}" for k, v in env.items()] + argv
        ok = self.run_exec(retry)
        self.assertEqual(ok.exit_code, 0, ok.stderr)
        self.assertEqual(ok.permissions.via, "approval")
        with open(log) as f:
            question = json.load(f)
        self.assertEqual(question["call_id"], "call-1")
        self.assertEqual(question["justification"], "write the test output")

    def test_bad_input_raises_invalid_request_and_runs_nothing(self):
        marker = os.path.join(self.ws, "ran")
        cases = [
            ({"cwd": self.ws, "command": ["touch", marker], "sandbox_mode": "writable"}, "sandbox_mode"),
            ({"cwd": self.ws, "command": ["touch", marker], "SANDBOX_MODE": "danger-full-access"}, "SANDBOX_MODE"),
            ({"cwd": self.ws, "command": ["touch", marker], "timeout_ms": -1}, "timeout_ms"),
            ({"command": ["touch", marker]}, "cwd"),
        ]
        for body, field in cases:
            with self.subTest(field=field):
                with self.assertRaises(sbx.InvalidRequestError) as cm:
                    self.run_exec(body)
                self.assertEqual(cm.exception.kind, "invalid_request")
                self.assertIn(field, str(cm.exception))
                self.assertFalse(os.path.exists(marker), "a refused request ran")
        with self.assertRaises(sbx.InvalidRequestError) as cm:
            self.run_exec(sbx.ExecRequest(command=["true"], cwd=self.ws, sandbox_mode="writable"))
        self.assertEqual(cm.exception.field, "sandbox_mode")

    def test_exec_failed(self):
        with self.assertRaises(sbx.ExecFailedError) as cm:
            self.run_exec(sbx.ExecRequest(command=["no-such-command-sbx"], cwd=self.ws))
        self.assertEqual(cm.exception.errno, "ENOENT")
        self.assertEqual(cm.exception.result.exit_code, 127)

    def test_fs_denied_then_granted(self):
        outside = tempfile.mkdtemp(prefix="sbx-py-outside-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, outside, True)
        target = os.path.join(outside, "notes.txt")
        req = sbx.ExecRequest(
            cwd=self.ws, sandbox_mode="workspace-write", fs=sbx.FsOp(op="write", path=target, content="hello\n")
        )
        r = sbx.fs(req, sbx=self.bin, timeout=60)
        self.assertFalse(r.ok)
        self.assertTrue(r.denied)
        self.assertEqual(r.error.kind, "denied")
        self.assertFalse(os.path.exists(target))
        ok = sbx.fs(req.with_grant(r.retry.grant), sbx=self.bin, timeout=60)
        self.assertTrue(ok.ok, ok.error)
        with open(target) as f:
            self.assertEqual(f.read(), "hello\n")

    def test_fs_failed_is_not_denied(self):
        req = sbx.ExecRequest(cwd=self.ws, sandbox_mode="workspace-write", fs=sbx.FsOp(op="remove", path="missing.txt"))
        r = sbx.fs(req, sbx=self.bin, timeout=60)
        self.assertFalse(r.ok)
        self.assertFalse(r.denied)
        self.assertEqual(r.error.kind, "failed")

    def test_wrong_entry_point(self):
        with self.assertRaises(ValueError):
            sbx.exec(sbx.ExecRequest(cwd=self.ws, fs=sbx.FsOp(op="mkdir", path="d")), sbx=self.bin)
        with self.assertRaises(ValueError):
            sbx.fs(sbx.ExecRequest(cwd=self.ws, command=["true"]), sbx=self.bin)

    def test_binary_not_found(self):
        with self.assertRaises(sbx.BinaryNotFoundError):
            sbx.exec(sbx.ExecRequest(cwd=self.ws, command=["true"]), sbx="/nonexistent/sbx")

    def test_not_sbx_is_a_protocol_error(self):
        with self.assertRaises(sbx.ProtocolError):
            sbx.exec(sbx.ExecRequest(cwd=self.ws, command=["true"]), sbx="/bin/false")


if __name__ == "__main__":
    unittest.main()
