"""Running the sbx binary: one ``sbx exec`` process per call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, Mapping, Optional, Union

from .errors import BinaryNotFoundError, ExecFailedError, ProtocolError, SbxError, error_for
from .types import ErrorDetail, ExecRequest, ExecResult, FsResult

# sbx exec's exit statuses: 0 for a result (the command's own status is in
# exit_code), 125 for a refusal (nothing ran).
EXIT_REFUSED = 125


def find_binary(sbx: Optional[str] = None) -> str:
    """The sbx to run: ``sbx`` if given, else $SBX, else ``sbx`` on PATH."""
    candidate = sbx or os.environ.get("SBX") or "sbx"
    path = candidate if os.sep in candidate else shutil.which(candidate)
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BinaryNotFoundError(f"sbx binary not found: {candidate!r} (pass sbx=, set $SBX, or put sbx on PATH)")
    return path


def _run(request: Union[ExecRequest, Mapping[str, Any]], sbx: Optional[str], timeout: Optional[float]) -> Dict[str, Any]:
    """Sends one request to ``sbx exec`` and returns the object it printed;
    a refusal raises its typed error."""
    body = request.to_dict() if isinstance(request, ExecRequest) else dict(request)
    if body.get("stream"):
        raise ValueError("stream: not supported by this client (it reads one result object)")
    proc = subprocess.run(
        [find_binary(sbx), "exec"],
        input=json.dumps(body).encode(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=timeout,
        check=False,
    )
    stderr = proc.stderr.decode(errors="replace")
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        raise ProtocolError(
            f"sbx exec exited {proc.returncode} without a JSON result: {stderr.strip() or '(no stderr)'}",
            proc.returncode,
            stderr,
        ) from None
    if not isinstance(out, dict):
        raise ProtocolError(f"sbx exec printed {type(out).__name__}, not an object", proc.returncode, stderr)
    if proc.returncode == EXIT_REFUSED or ("exit_code" not in out and "error_detail" in out):
        detail = out.get("error_detail")
        if not isinstance(detail, dict):
            raise ProtocolError(f"sbx exec exited {proc.returncode} without error_detail: {stderr.strip()}", proc.returncode, stderr)
        raise error_for(ErrorDetail.from_dict(detail), out)
    if proc.returncode != 0:
        raise ProtocolError(f"sbx exec exited {proc.returncode}: {stderr.strip()}", proc.returncode, stderr)
    return out


def exec(request: Union[ExecRequest, Mapping[str, Any]], *, sbx: Optional[str] = None, timeout: Optional[float] = None) -> ExecResult:
    """Runs ``request`` (with ``command`` or ``shell``) under sbx.

    Returns the ExecResult whatever the command's exit status, and when the
    sandbox blocked something (``result.denials``, ``result.retry``). Raises
    the typed error of a refusal (InvalidRequestError, DeniedByPolicyError,
    UnsupportedError, InternalError; nothing ran), ExecFailedError when the
    command could not start, ProtocolError when sbx answered no JSON.
    ``timeout`` (seconds) bounds the sbx process; use ``timeout_ms`` in the
    request to have sbx kill the command and report it.
    """
    body = request.to_dict() if isinstance(request, ExecRequest) else dict(request)
    if "fs" in body:
        raise ValueError("fs: use sbx.fs() for a file-system change")
    out = _run(body, sbx, timeout)
    result = ExecResult.from_dict(out)
    if result.error_detail is not None and result.error_detail.kind == ExecFailedError.kind:
        raise ExecFailedError(result.error_detail.message, result.error_detail, out, result)
    return result


def fs(request: Union[ExecRequest, Mapping[str, Any]], *, sbx: Optional[str] = None, timeout: Optional[float] = None) -> FsResult:
    """Makes the file-system change of ``request.fs`` under sbx's sandbox.

    Returns the FsResult: ``ok``, or ``error.kind`` ``denied`` (with
    ``retry``) or ``failed``. Refusals raise as for exec().
    """
    body = request.to_dict() if isinstance(request, ExecRequest) else dict(request)
    if "fs" not in body:
        raise ValueError("fs: the request has no fs change (use sbx.exec() for a command)")
    out = _run(body, sbx, timeout)
    if "op" not in out:
        raise ProtocolError("sbx exec printed no fs result (no op)", 0, "")
    return FsResult.from_dict(out)


__all__ = ["exec", "fs", "find_binary", "SbxError"]
