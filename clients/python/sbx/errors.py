"""Typed errors, one class per ``error_detail.kind`` of docs/json.md.

A refusal (sbx exit 125: nothing ran) raises the class of its kind; a command
that could not start raises ExecFailedError with the result attached. A
denial is not an error: the result reports it (``denials``, ``retry``), so the
caller can apply the retry. Tell errors apart by class (or ``kind``), never
by the message.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

from .types import ErrorDetail


class SbxError(Exception):
    """Base of every error this package raises.

    ``detail`` is the error object sbx printed (None when sbx printed none:
    ProtocolError, BinaryNotFoundError); ``raw`` the whole object sbx printed.
    """

    kind: Optional[str] = None

    def __init__(self, message: str, detail: Optional[ErrorDetail] = None, raw: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.raw = raw or {}


class InvalidRequestError(SbxError):
    """The request is bad; ``field`` names the field at fault when sbx knows it."""

    kind = "invalid_request"

    @property
    def field(self) -> Optional[str]:
        return self.detail.field if self.detail else None


class DeniedByPolicyError(SbxError):
    """The escalation was not approved. ``outcome``: rejected, cancelled,
    unavailable (no usable answer) or never (approval policy never)."""

    kind = "denied_by_policy"

    @property
    def outcome(self) -> Optional[str]:
        return self.detail.outcome if self.detail else None


class UnsupportedError(SbxError):
    """A ``require``d feature cannot be enforced on this machine."""

    kind = "unsupported"

    @property
    def feature(self) -> Optional[str]:
        return self.detail.feature if self.detail else None


class ExecFailedError(SbxError):
    """The command could not be started (exit 126, 127); ``result`` is the
    ExecResult, ``errno`` the error's name (ENOENT, EACCES)."""

    kind = "exec_failed"

    def __init__(self, message: str, detail: Optional[ErrorDetail] = None, raw: Optional[Dict[str, Any]] = None, result: Any = None):
        super().__init__(message, detail, raw)
        self.result = result

    @property
    def errno(self) -> Optional[str]:
        return self.detail.errno if self.detail else None


class InternalError(SbxError):
    """sbx itself failed (a pipe, the fs helper)."""

    kind = "internal"


class ProtocolError(SbxError):
    """sbx did not answer with the contract's JSON (it crashed, was killed,
    or is not sbx); ``returncode`` and ``stderr`` say what happened."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class RequestTimeoutError(ProtocolError, TimeoutError):
    """sbx serve did not answer a request within its timeout. The client asked
    the server to cancel it (``$/cancelRequest``); ``method`` names it."""

    def __init__(self, message: str, method: str):
        super().__init__(message)
        self.method = method


class ConnectionLostError(ProtocolError):
    """The connection to sbx serve ended before it answered (the server exited
    or restarted). For an ``exec``, ``call_id`` names the call: a restarted
    server records it ``lost`` (never run again by itself); ask again in a new
    turn if it should run."""

    def __init__(self, message: str, method: str, call_id: Optional[str] = None):
        super().__init__(message)
        self.method = method
        self.call_id = call_id


class BinaryNotFoundError(SbxError, FileNotFoundError):
    """No sbx binary: not given, not in $SBX, not on PATH."""


_BY_KIND: Dict[str, Type[SbxError]] = {
    c.kind: c for c in (InvalidRequestError, DeniedByPolicyError, UnsupportedError, ExecFailedError, InternalError) if c.kind
}


def error_for(detail: ErrorDetail, raw: Dict[str, Any]) -> SbxError:
    """The typed error of a refusal; an unknown (newer) kind is a plain SbxError
    whose ``detail.kind`` still says which."""
    cls = _BY_KIND.get(detail.kind, SbxError)
    err = cls(detail.message, detail, raw)
    return err
