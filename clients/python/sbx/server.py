"""A client of ``sbx serve``: one long-lived server process, JSON-RPC 2.0
over its stdin and stdout (docs/serve.md), many calls without a start each.

    with sbx.Server() as srv:
        s = srv.open_session(cwd="/src", preset="auto")
        turn = srv.begin_turn(s)
        r = srv.exec(s, turn, "c1", {"command": ["make", "test"], "cwd": "/src"})

Requests may come from several threads at once: a reader thread routes each
response to its request by id and each ``exec/output`` event to the callback
of its call.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import threading
import time
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Union

from .client import find_binary
from .errors import ConnectionLostError, ProtocolError, RequestTimeoutError, SbxError
from .types import ExecRequest, ExecResult, FsResult


class ServerError(SbxError):
    """A JSON-RPC error of sbx serve: ``code`` and ``kind`` (``data.kind``,
    docs/serve.md "Errors": unknown_session, no_open_turn, denied, conflict,
    invalid_params, ...), ``data`` the whole error data."""

    def __init__(self, code: int, message: str, data: Optional[Dict[str, Any]]):
        super().__init__(message, None, data or {})
        self.code = code
        self.data = data or {}
        self.kind = self.data.get("kind")

    @property
    def field(self) -> Optional[str]:
        return self.data.get("field")

    @property
    def outcome(self) -> Optional[str]:
        return self.data.get("outcome")


class _Pending:
    def __init__(self, method: str, call_id: Optional[str]) -> None:
        self.done = threading.Event()
        self.msg: Optional[Dict[str, Any]] = None
        self.method = method
        self.call_id = call_id


class _Link:
    """One connection to the server: a process's pipes or a unix socket. Each
    has its own requests in flight, which fail when it ends."""

    def __init__(self, write: Callable[[bytes], None], lines: BinaryIO, close: Callable[[], None]):
        self.write = write
        self.lines = lines
        self.close = close
        self.pending: Dict[int, _Pending] = {}
        self.closed = False


def _dial(path: str, wait: float) -> socket.socket:
    """Connects to the socket at ``path``, retrying for ``wait`` seconds while
    it is missing or refuses (a server restarting binds it anew).

    IMPORTANT: the server is whoever listens at ``path``: the server checks
    its peer, this client does not check the server. The socket's directory
    must be one only its user can write (docs/security.md, known gaps)."""
    deadline = time.monotonic() + wait
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as e:
            sock.close()
            if time.monotonic() >= deadline:
                raise ProtocolError(f"sbx serve: connect {path}: {e.strerror}") from None
            time.sleep(0.1)
        except OSError:
            sock.close()
            raise


class Server:
    """Starts ``sbx serve`` (``args`` are its extra flags, e.g.
    ``["--ephemeral"]``) and speaks to it. Close it (or use ``with``) to shut
    it down: ``shutdown`` then ``exit``; the server's calls end with it.
    ``connect(path)`` speaks to a server already listening instead
    (``sbx serve --listen PATH``).

    ``timeout`` (seconds) bounds every request (``exec`` takes its own): one
    not answered in time raises RequestTimeoutError, and the server is asked
    to cancel it.

    ``on_approval``, when given, answers the server's approvals (this client
    declares ``approvals`` at ``initialize``, docs/serve.md "Answerers"): it
    gets the ``approval/requested`` params (session_id, approval_id,
    tool_name, reason, call_id and command when known, and the rest of the
    question an approver program reads: new_permissions, target_mode, ...) on a thread of its
    own and returns ``"allowed-once"`` or ``"rejected"``; anything else, or
    an exception, answers ``"rejected"``."""

    def __init__(self, *, sbx: Optional[str] = None, args: Optional[List[str]] = None, timeout: Optional[float] = None,
                 on_approval: Optional[Callable[[Dict[str, Any]], str]] = None,
                 _socket_path: Optional[str] = None, _reconnect_wait: float = 30.0):
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._outputs: Dict[str, Callable[[Dict[str, Any]], None]] = {}
        self._turns: Dict[str, str] = {}
        self._on_approval = on_approval
        self._path = _socket_path
        self._reconnect_wait = _reconnect_wait
        self._shut = False
        self._reconnecting = threading.RLock()
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._readers: List[threading.Thread] = []
        #: call ids of the ``exec`` requests a lost connection took with it, oldest first.
        self.lost_calls: List[str] = []
        if _socket_path is None:
            self._proc = subprocess.Popen(
                [find_binary(sbx), "serve", *(args or [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # The server's stderr (warnings, refused peers) is this
                # process's: a pipe nobody reads could fill and stall it.
                stderr=None,
            )
            stdin, stdout = self._proc.stdin, self._proc.stdout
            assert stdin is not None and stdout is not None

            def write(b: bytes) -> None:
                stdin.write(b)
                stdin.flush()

            self._link = self._attach(write, stdout, stdin.close)
        else:
            self._link = self._attach_socket(_dial(_socket_path, 0))
        self.info: Dict[str, Any] = self._initialize()

    # The wire.

    def _attach(self, write: Callable[[bytes], None], lines: BinaryIO, close: Callable[[], None]) -> _Link:
        link = _Link(write, lines, close)
        reader = threading.Thread(target=self._read, args=(link,), daemon=True)
        self._readers.append(reader)
        reader.start()
        return link

    def _attach_socket(self, sock: socket.socket) -> _Link:
        rfile = sock.makefile("rb")

        def close() -> None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

        return self._attach(sock.sendall, rfile, close)

    def _initialize(self) -> Dict[str, Any]:
        return self.request("initialize", {"capabilities": {"approvals": True}} if self._on_approval else {})

    def _send(self, link: _Link, msg: Dict[str, Any]) -> None:
        line = (json.dumps(msg) + "\n").encode()
        with self._lock:
            if link.closed:
                raise ConnectionLostError("sbx serve: the connection is closed", str(msg.get("method", "")))
            try:
                link.write(line)
            except OSError as e:
                raise ConnectionLostError(f"sbx serve: write: {e}", str(msg.get("method", ""))) from None

    def _read(self, link: _Link) -> None:
        try:
            for line in link.lines:
                self._dispatch(link, line)
        except (OSError, ValueError):
            pass  # a socket closed under the reader: the connection ended
        finally:
            # The reader owns its end: a socket's file keeps the socket open.
            try:
                link.lines.close()
            except OSError:
                pass
        # The connection ended: every request still waiting on it fails, and
        # the calls among them are lost (a restarted server records them so).
        with self._lock:
            link.closed = True
            pending, link.pending = link.pending, {}
            self.lost_calls.extend(p.call_id for p in pending.values() if p.call_id is not None)
        for p in pending.values():
            p.done.set()

    def _dispatch(self, link: _Link, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if "id" in msg and ("result" in msg or "error" in msg):
            with self._lock:
                p = link.pending.pop(msg["id"], None)
            if p is not None:
                p.msg = msg
                p.done.set()
        elif msg.get("method") == "approval/requested" and "id" in msg and self._on_approval is not None:
            threading.Thread(target=self._answer, args=(link, msg["id"], msg.get("params") or {}), daemon=True).start()
        elif msg.get("method") == "exec/output":
            params = msg.get("params") or {}
            cb = self._outputs.get(params.get("call_id", ""))
            if cb is not None:
                cb(params)

    def _answer(self, link: _Link, rpc_id: Any, params: Dict[str, Any]) -> None:
        try:
            outcome = self._on_approval(params) if self._on_approval else "rejected"
        except Exception:  # noqa: BLE001 - an answerer's failure is a rejection
            outcome = "rejected"
        if outcome not in ("allowed-once", "rejected"):
            outcome = "rejected"
        try:
            self._send(link, {"jsonrpc": "2.0", "id": rpc_id, "result": {
                "session_id": params.get("session_id"), "approval_id": params.get("approval_id"), "outcome": outcome}})
        except SbxError:
            pass

    def reconnect(self) -> None:
        """Connects anew to the socket (waiting up to ``reconnect_wait``
        seconds for a restarted server to listen) and initializes again.
        Requests of the old connection that were still waiting have failed
        with ConnectionLostError; ``lost_calls`` names their calls. Only for
        a client made by ``connect``."""
        if self._path is None:
            raise ProtocolError("sbx serve: reconnect: this client spawned its server (use sbx.connect)")
        old = self._link
        old.close()
        self._link = self._attach_socket(_dial(self._path, self._reconnect_wait))
        self.info = self._initialize()

    def request(self, method: str, params: Any = None, *, timeout: Optional[float] = None) -> Any:
        """Sends one request and returns its result; an error response
        raises ServerError, no answer in time RequestTimeoutError, a
        connection that ended before the answer ConnectionLostError. A
        client made by ``connect`` whose connection had ended connects
        anew first."""
        if self._link.closed and self._path is not None and not self._shut:
            # One reconnect for all the threads that found the connection gone.
            with self._reconnecting:
                if self._link.closed and not self._shut:
                    self.reconnect()
        link = self._link
        rid = next(self._ids)
        p = _Pending(method, params.get("call_id") if method == "exec" and isinstance(params, dict) else None)
        with self._lock:
            link.pending[rid] = p
        try:
            self._send(link, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except SbxError:
            with self._lock:
                link.pending.pop(rid, None)
            raise
        if not p.done.wait(timeout if timeout is not None else self._timeout):
            with self._lock:
                link.pending.pop(rid, None)
            # Whatever the server is doing for it would go on: ask it to stop
            # (an exec not started yet is not run, a running one is killed).
            try:
                self._send(link, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
            except SbxError:
                pass
            raise RequestTimeoutError(f"sbx serve: no response to {method} in time", method)
        if p.msg is None:
            code = self._proc.poll() if self._proc is not None else None
            what = f"sbx serve exited before it answered {method} (its stderr is this process's)" if self._proc is not None \
                else f"sbx serve: the connection ended before the answer to {method}"
            err = ConnectionLostError(what, method, p.call_id)
            err.returncode = code
            raise err
        if "error" in p.msg:
            e = p.msg["error"] or {}
            raise ServerError(int(e.get("code", 0)), str(e.get("message", "")), e.get("data"))
        return p.msg.get("result")

    # The methods (docs/serve.md "Methods").

    def open_session(self, cwd: str, *, session_id: Optional[str] = None, preset: Optional[str] = None,
                     sandbox_mode: Optional[str] = None, approval_policy: Optional[str] = None,
                     environment_id: Optional[str] = None, guard: Optional[str] = None,
                     acp_session_id: Optional[str] = None) -> str:
        """Opens a session and returns its id. acp_session_id binds it to an ACP session: the server's
        acp answerer asks that ACP client about its calls (docs/serve.md, "ACP")."""
        params: Dict[str, Any] = {"cwd": cwd}
        for k, v in (("session_id", session_id), ("preset", preset), ("sandbox_mode", sandbox_mode),
                     ("approval_policy", approval_policy), ("environment_id", environment_id), ("guard", guard),
                     ("acp_session_id", acp_session_id)):
            if v is not None:
                params[k] = v
        return self.request("session/open", params)["session_id"]

    def set_preset(self, session_id: str, key: str) -> Dict[str, Any]:
        return self.request("session/set_preset", {"session_id": session_id, "key": key})

    def permissions(self, session_id: str) -> Dict[str, Any]:
        return self.request("session/permissions", {"session_id": session_id})

    def close_session(self, session_id: str) -> None:
        """Closes the session for good: its running calls are killed, its pending approvals settle
        cancelled, its turn ends; afterwards its id is unknown_session (docs/serve.md, "Closing a session")."""
        self.request("session/close", {"session_id": session_id})

    def begin_turn(self, session_id: str) -> str:
        turn: str = self.request("turn/begin", {"session_id": session_id})["turn_id"]
        self._turns[session_id] = turn
        return turn

    def resume(self, session_id: str) -> str:
        """Picks a session up again after the connection ended, and returns
        the turn to go on in. A restarted server rebuilt the session from its
        durable log (grants of the session included), ended its open turn and
        recorded the calls it found unfinished ``lost``: a new turn begins. A
        server that kept running kept the turn: it goes on. A session the
        server does not know (an ``--ephemeral`` server restarted, or the
        session was closed) raises ServerError ``unknown_session``."""
        try:
            return self.begin_turn(session_id)
        except ServerError as e:
            if e.kind != "conflict":
                raise
            known = self._turns.get(session_id)
            if known is None:
                # Another client (or this process before a restart) began
                # it: session/permissions names the open turn.
                known = self.permissions(session_id).get("turn_id")
            if known is None:
                raise
            self._turns[session_id] = known
            return known

    def end_turn(self, session_id: str, turn_id: str) -> None:
        self.request("turn/end", {"session_id": session_id, "turn_id": turn_id})

    def apply_grant(self, session_id: str, requested: Mapping[str, Any], granted: Mapping[str, Any], *,
                    scope: str = "turn", environment_id: Optional[str] = None,
                    strict_auto_review: bool = False) -> Dict[str, Any]:
        """Stores what the user granted of a request_permissions request."""
        response: Dict[str, Any] = {"granted": dict(granted), "scope": scope}
        if strict_auto_review:
            response["strict_auto_review"] = True
        params: Dict[str, Any] = {"session_id": session_id, "requested": dict(requested), "response": response}
        if environment_id is not None:
            params["environment_id"] = environment_id
        return self.request("grants/apply", params)

    def exec(self, session_id: str, turn_id: str, call_id: str, request: Union[ExecRequest, Mapping[str, Any]], *,
             on_output: Optional[Callable[[Dict[str, Any]], None]] = None,
             timeout: Optional[float] = None) -> Union[ExecResult, FsResult]:
        """Runs one call of the turn: the sbx exec request, with its output
        streamed to ``on_output`` (one event dict each) when given. Returns
        the ExecResult (or FsResult for an ``fs`` request); a call that was
        refused or not approved raises ServerError (kind invalid_params,
        denied, cancelled, ...)."""
        body = request.to_dict() if isinstance(request, ExecRequest) else dict(request)
        params = {**body, "session_id": session_id, "turn_id": turn_id, "call_id": call_id}
        if on_output is not None:
            params["stream"] = True
            self._outputs[call_id] = on_output
        try:
            out = self.request("exec", params, timeout=timeout)
        finally:
            self._outputs.pop(call_id, None)
        return FsResult.from_dict(out) if "op" in out else ExecResult.from_dict(out)

    def call_status(self, session_id: str, call_id: str) -> Dict[str, Any]:
        """What became of a call of the session (call/status), for a client
        that lost its answer: ``{"status": "running" | "finished" | "lost" |
        "started" | "unknown", "outcome"?, "exit_code"?, "error"?}``. A call a
        restarted server found unfinished is ``lost`` (docs/serve.md)."""
        out: Dict[str, Any] = self.request("call/status", {"session_id": session_id, "call_id": call_id})
        return out

    def cancel(self, call_id: str) -> bool:
        """Cancels a call in flight; False when there is none by that id."""
        return bool(self.request("exec/cancel", {"call_id": call_id})["cancelled"])

    def close(self) -> int:
        """Shuts a spawned server down and returns its exit status; a client
        made by ``connect`` only closes its connection (the server serves
        others) and returns 0."""
        self._shut = True
        link = self._link
        if self._proc is None:
            with self._lock:
                link.closed = True
            link.close()
            for r in self._readers:
                r.join(5)
            return 0
        if self._proc.poll() is None and not link.closed:
            try:
                self.request("shutdown", None, timeout=30)
                self._send(link, {"jsonrpc": "2.0", "method": "exit"})
            except SbxError:
                pass
        with self._lock:
            link.closed = True
            try:
                link.close()
            except OSError:
                pass
        try:
            code = self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        for r in self._readers:
            r.join(5)
        if self._proc.stdout:
            self._proc.stdout.close()
        return code

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect(socket_path: str, *, timeout: Optional[float] = None,
            on_approval: Optional[Callable[[Dict[str, Any]], str]] = None, reconnect_wait: float = 30.0) -> Server:
    """Connects to ``sbx serve --listen socket_path`` and initializes.

    The Server it returns is the one ``Server()`` returns, but over the
    socket: closing it closes the connection, not the server. When the
    connection ends (the server restarted), the requests waiting on it fail
    with ConnectionLostError, and the next request connects anew, waiting up
    to ``reconnect_wait`` seconds for the socket; ``resume(session_id)`` then
    picks a session up from the server's durable log."""
    return Server(timeout=timeout, on_approval=on_approval, _socket_path=socket_path, _reconnect_wait=reconnect_wait)
