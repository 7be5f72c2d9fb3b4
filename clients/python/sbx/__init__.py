"""sbx: a Python client for the sbx sandbox launcher.

Each call runs the ``sbx`` binary once (``sbx exec``, the JSON contract of
docs/json.md), so this package needs only the standard library::

    import sbx
    r = sbx.exec(sbx.ExecRequest(command=["make", "test"], cwd="/src", sandbox_mode="workspace-write"))
    if r.denied and r.retry and r.retry.grant:
        # ask the user; when they agree:
        r = sbx.exec(request.with_grant(r.retry.grant))

``sbx.Server`` holds one ``sbx serve`` instead: sessions, turns, stored
grants and approvals, and no sbx start per call (docs/serve.md);
``sbx.connect(path)`` speaks to one listening on a unix socket, and picks its
sessions up again after it restarts.
"""

from .client import exec, find_binary, fs
from .server import Server, ServerError, connect
from .errors import (
    BinaryNotFoundError,
    ConnectionLostError,
    DeniedByPolicyError,
    ExecFailedError,
    InternalError,
    InvalidRequestError,
    ProtocolError,
    RequestTimeoutError,
    SbxError,
    UnsupportedError,
)
from .types import (
    SCHEMA_VERSION,
    Denial,
    Downgrade,
    EnvPolicy,
    EnvReport,
    ErrorDetail,
    ExecRequest,
    ExecResult,
    FileSystemPermissions,
    FsOp,
    FsResult,
    Grants,
    Limits,
    NetworkPermission,
    Permissions,
    Profile,
    Pty,
    Report,
    Retry,
    Shell,
)

__version__ = "0.1.0"

__all__ = [
    "exec", "fs", "find_binary", "Server", "ServerError", "connect", "ConnectionLostError", "RequestTimeoutError",
    "SbxError", "InvalidRequestError", "DeniedByPolicyError", "UnsupportedError", "ExecFailedError",
    "InternalError", "ProtocolError", "BinaryNotFoundError",
    "SCHEMA_VERSION", "ExecRequest", "ExecResult", "FsResult", "Report", "Profile", "NetworkPermission",
    "FileSystemPermissions", "Shell", "EnvPolicy", "FsOp", "Limits", "Pty", "Grants", "ErrorDetail",
    "Downgrade", "Denial", "Retry", "Permissions", "EnvReport",
]
