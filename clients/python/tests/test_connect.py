"""sbx.connect against the real ``sbx serve --listen``: calls over the
socket, a server restart that loses a running call (the client says which,
the server's durable log says ``lost``), the session picked up again in a
new turn with its grant, and the request timeout."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import sbx

from .support import sbx_binary


class _Listening(unittest.TestCase):
    """A server on a socket of its own directory, with a durable state
    directory that outlives it."""

    @classmethod
    def setUpClass(cls):
        cls.bin = sbx_binary()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sbx-pyconnect-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.ws = os.path.join(self.tmp, "ws")
        self.state = os.path.join(self.tmp, "state")
        self.sockdir = os.path.join(self.tmp, "run")
        os.mkdir(self.ws, 0o755)
        os.mkdir(self.state, 0o700)
        os.mkdir(self.sockdir, 0o700)
        self.sock = os.path.join(self.sockdir, "sbx.sock")
        self.proc = None
        self.start()
        self.addCleanup(self.stop)

    def start(self):
        self.proc = subprocess.Popen([self.bin, "serve", "--listen", self.sock, "--state-dir", self.state])
        deadline = time.monotonic() + 30
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.fail(f"sbx serve --listen did not make {self.sock} (exit {self.proc.poll()})")
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)
        self.proc = None
        # A SIGKILLed server leaves its socket file: the next one is not bound over it.
        if os.path.exists(self.sock):
            os.remove(self.sock)


class ConnectTest(_Listening):
    def test_calls_over_the_socket(self):
        srv = sbx.connect(self.sock, timeout=60)
        self.addCleanup(srv.close)
        self.assertEqual(srv.info["protocol_version"], "1")
        s = srv.open_session(self.ws, session_id="s1", preset="auto")
        self.assertEqual(srv.permissions(s)["current"]["session_id"], "s1")
        r = srv.exec(s, srv.begin_turn(s), "c1", {"shell": {"kind": "sh", "script": "echo hi"}, "cwd": self.ws})
        self.assertEqual((r.exit_code, r.stdout), (0, "hi\n"), r.raw)
        # Closing a connected client leaves the server serving others.
        srv.close()
        other = sbx.connect(self.sock, timeout=60)
        self.addCleanup(other.close)
        self.assertEqual(other.permissions(s)["current"]["session_id"], "s1")

    def test_restart_loses_the_running_call_and_resumes(self):
        srv = sbx.connect(self.sock, timeout=60, reconnect_wait=30)
        self.addCleanup(srv.close)
        s = srv.open_session(self.ws, session_id="s1", preset="auto")
        turn = srv.begin_turn(s)
        outside = tempfile.mkdtemp(prefix="sbx-pyconnect-out-", dir="/var/tmp")
        os.chmod(outside, 0o777)
        self.addCleanup(shutil.rmtree, outside, True)
        srv.apply_grant(s, {"file_system": {"write": [outside]}}, {"file_system": {"write": [outside]}}, scope="session")
        marker = os.path.join(self.ws, "started")
        errors = []

        def long_call():
            try:
                srv.exec(s, turn, "c-long", {"shell": {"kind": "sh", "script": f"touch {marker}; sleep 60"}, "cwd": self.ws})
            except sbx.SbxError as e:
                errors.append(e)

        import threading
        t = threading.Thread(target=long_call)
        t.start()
        deadline = time.monotonic() + 30
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(marker), "the long call never started")
        other = sbx.connect(self.sock, timeout=60)
        self.assertEqual(other.call_status(s, "c-long")["status"], "running")
        other.close()
        # The server dies with the call running (SIGKILL: no goodbye), and
        # comes back on the same socket and state directory.
        self.stop(signal.SIGKILL)
        t.join(30)
        self.assertEqual(len(errors), 1)
        self.assertIsInstance(errors[0], sbx.ConnectionLostError)
        self.assertEqual(errors[0].call_id, "c-long")
        self.assertEqual(srv.lost_calls, ["c-long"])
        self.start()
        # The next request connects anew; the session comes back from the
        # log, in a new turn (the old one was ended at replay).
        turn2 = srv.resume(s)
        self.assertNotEqual(turn2, turn)
        with self.assertRaises(sbx.ServerError) as cm:
            srv.exec(s, turn, "c-old-turn", {"shell": {"kind": "sh", "script": "true"}, "cwd": self.ws})
        self.assertEqual(cm.exception.kind, "no_open_turn")
        # The session's grant was replayed: writing outside works.
        target = os.path.join(outside, "f")
        r = srv.exec(s, turn2, "c-after", {"shell": {"kind": "sh", "script": f"echo ok > {target}"}, "cwd": self.ws})
        self.assertEqual(r.exit_code, 0, r.raw)
        self.assertFalse(r.denied, r.raw)
        # call/status says the same as the log: c-long lost, c-after finished.
        self.assertEqual(srv.call_status(s, "c-long")["status"], "lost")
        after = srv.call_status(s, "c-after")
        self.assertEqual((after["status"], after["exit_code"], after["outcome"]), ("finished", 0, "exited"), after)
        self.assertEqual(srv.call_status(s, "c-never")["status"], "unknown")
        # The durable log says what the client was told: c-long was lost.
        show = subprocess.run([self.bin, "log", "show", "--json", self.state], stdout=subprocess.PIPE, check=False)
        out = show.stdout.decode()
        self.assertRegex(out, r'"call_id":\s*"c-long"[^}]*"outcome":\s*"lost"|"outcome":\s*"lost"[^}]*"call_id":\s*"c-long"', out)

    def test_resume_without_restart_keeps_the_turn(self):
        srv = sbx.connect(self.sock, timeout=60)
        self.addCleanup(srv.close)
        s = srv.open_session(self.ws, session_id="s1", preset="auto")
        turn = srv.begin_turn(s)
        self.assertEqual(srv.resume(s), turn)
        self.assertEqual(srv.permissions(s)["turn_id"], turn)
        # A client that did not begin the turn learns it from session/permissions.
        other = sbx.connect(self.sock, timeout=60)
        self.addCleanup(other.close)
        self.assertEqual(other.resume(s), turn)
        with self.assertRaises(sbx.ServerError) as cm:
            srv.resume("nope")
        self.assertEqual(cm.exception.kind, "unknown_session")

    def test_request_timeout_cancels_the_call(self):
        srv = sbx.connect(self.sock, timeout=60)
        self.addCleanup(srv.close)
        s = srv.open_session(self.ws, session_id="s1", preset="auto")
        turn = srv.begin_turn(s)
        start = time.monotonic()
        with self.assertRaises(sbx.RequestTimeoutError) as cm:
            srv.exec(s, turn, "c-slow", {"shell": {"kind": "sh", "script": "sleep 60"}, "cwd": self.ws}, timeout=1)
        self.assertEqual(cm.exception.method, "exec")
        self.assertLess(time.monotonic() - start, 10)
        # The client asked the server to cancel it: the call id is free again
        # once the cancelled call has finished (a call id in flight is a conflict).
        deadline = time.monotonic() + 20
        while True:
            try:
                r = srv.exec(s, turn, "c-slow", {"shell": {"kind": "sh", "script": "echo again"}, "cwd": self.ws})
                break
            except sbx.ServerError as e:
                if e.kind != "conflict" or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.assertEqual(r.stdout, "again\n", r.raw)


if __name__ == "__main__":
    unittest.main()
