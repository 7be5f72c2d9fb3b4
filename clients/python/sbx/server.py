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
import subprocess
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .client import find_binary
from .errors import ProtocolError, SbxError
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
    def __init__(self) -> None:
        self.done = threading.Event()
        self.msg: Optional[Dict[str, Any]] = None


class Server:
    """Starts ``sbx serve`` (``args`` are its extra flags, e.g.
    ``["--ephemeral"]``) and speaks to it. Close it (or use ``with``) to shut
    it down: ``shutdown`` then ``exit``; the server's calls end with it.

    ``on_approval``, when given, answers the server's approvals (this client
    declares ``approvals`` at ``initialize``, docs/serve.md "Answerers"): it
    gets the ``approval/requested`` params (session_id, approval_id,
    tool_name, reason, call_id and command when known, and the rest of the
    question an approver program reads: new_permissions, target_mode, ...) on a thread of its
    own and returns ``"allowed-once"`` or ``"rejected"``; anything else, or
    an exception, answers ``"rejected"``."""

    def __init__(self, *, sbx: Optional[str] = None, args: Optional[List[str]] = None, timeout: Optional[float] = None,
                 on_approval: Optional[Callable[[Dict[str, Any]], str]] = None):
        self._proc = subprocess.Popen(
            [find_binary(sbx), "serve", *(args or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # The server's stderr (warnings, refused peers) is this
            # process's: a pipe nobody reads could fill and stall it.
            stderr=None,
        )
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        self._outputs: Dict[str, Callable[[Dict[str, Any]], None]] = {}
        self._closed = False
        self._on_approval = on_approval
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.info = self.request("initialize", {"capabilities": {"approvals": True}} if on_approval else {})

    # The wire.

    def _send(self, msg: Dict[str, Any]) -> None:
        line = (json.dumps(msg) + "\n").encode()
        with self._lock:
            if self._closed or self._proc.stdin is None:
                raise ProtocolError("sbx serve: the connection is closed", self._proc.poll() or 0, "")
            self._proc.stdin.write(line)
            self._proc.stdin.flush()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                with self._lock:
                    p = self._pending.pop(msg["id"], None)
                if p is not None:
                    p.msg = msg
                    p.done.set()
            elif msg.get("method") == "approval/requested" and "id" in msg and self._on_approval is not None:
                threading.Thread(target=self._answer, args=(msg["id"], msg.get("params") or {}), daemon=True).start()
            elif msg.get("method") == "exec/output":
                params = msg.get("params") or {}
                cb = self._outputs.get(params.get("call_id", ""))
                if cb is not None:
                    cb(params)
        # The server went away: every request still waiting fails.
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, {}
        for p in pending.values():
            p.done.set()

    def _answer(self, rpc_id: Any, params: Dict[str, Any]) -> None:
        try:
            outcome = self._on_approval(params) if self._on_approval else "rejected"
        except Exception:  # noqa: BLE001 - an answerer's failure is a rejection
            outcome = "rejected"
        if outcome not in ("allowed-once", "rejected"):
            outcome = "rejected"
        try:
            self._send({"jsonrpc": "2.0", "id": rpc_id, "result": {
                "session_id": params.get("session_id"), "approval_id": params.get("approval_id"), "outcome": outcome}})
        except SbxError:
            pass

    def request(self, method: str, params: Any = None, *, timeout: Optional[float] = None) -> Any:
        """Sends one request and returns its result; an error response
        raises ServerError, a server that went away ProtocolError."""
        rid = next(self._ids)
        p = _Pending()
        with self._lock:
            self._pending[rid] = p
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if not p.done.wait(timeout if timeout is not None else self._timeout):
            with self._lock:
                self._pending.pop(rid, None)
            raise ProtocolError(f"sbx serve: no response to {method} in time", 0, "")
        if p.msg is None:
            raise ProtocolError(f"sbx serve exited before it answered {method} (its stderr is this process's)", self._proc.poll() or 0, "")
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
        return self.request("turn/begin", {"session_id": session_id})["turn_id"]

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

    def cancel(self, call_id: str) -> bool:
        """Cancels a call in flight; False when there is none by that id."""
        return bool(self.request("exec/cancel", {"call_id": call_id})["cancelled"])

    def close(self) -> int:
        """Shuts the server down and returns its exit status."""
        if self._proc.poll() is None and not self._closed:
            try:
                self.request("shutdown", None, timeout=30)
                self._send({"jsonrpc": "2.0", "method": "exit"})
            except SbxError:
                pass
        with self._lock:
            self._closed = True
            if self._proc.stdin:
                try:
                    self._proc.stdin.close()
                except OSError:
                    pass
        try:
            code = self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        self._reader.join(5)
        if self._proc.stdout:
            self._proc.stdout.close()
        return code

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
