"""What the PATH shims run: one Slurm command sent to the simulator server of a state directory.

This module imports the standard library's built-in parts only (no ``socket``, ``json`` or
``typing`` at run time), and the shims load it with ``python -I -S`` from its cached bytecode, so
that a call costs an interpreter start and one round trip on a Unix socket, whatever the
cluster's history. The server (``python -m simulators.slurm.shims --state-dir DIR serve``, see
:mod:`simulators.slurm.shims`) holds the cluster in memory; the first call that finds none
running starts it, under ``DIR/start.lock`` so that concurrent calls start one.

Messages are marshal-encoded dictionaries, each preceded by its length (8 bytes, big-endian): the
client and the server are the same interpreter. A request is ``{"kind": "slurm", "program": ...,
"args": [...], "env": {...}, "cwd": ...}``, ``{"kind": "manage", "op": ..., ...}`` (an action, its
arguments checked) or ``{"kind": "cli", "argv": [...]}`` (an action's command line); the answer
``{"stdout": ..., "stderr": ..., "status": ...}``, or ``{"need": "stdin"}`` (sbatch reads its
script from stdin: the client reads it, with no connection open, and asks again with
``"stdin"`` in its request), or
``{"restart": True}`` (the simulator's code or the trace changed under the server, which has
stopped: the client starts a new one and asks again).
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # only for the type checker: typing costs milliseconds at run time
    from collections.abc import Callable
    from typing import Any, Final

PROG: Final = "dispatch-slurm-shims"
STATE_FILE: Final = "trace.jsonl"
LOCK_FILE: Final = "lock"
START_LOCK: Final = "start.lock"
SOCKET_FILE: Final = "sock"
LOG_FILE: Final = "server.log"

EXIT_REFUSED: Final = 1
"""The simulated cluster refused the action (an unknown job, a job not running, ...)."""
EXIT_USAGE: Final = 2
"""Bad usage: a bad number, an unknown action, option, fault or field, a bad KEY=VALUE."""
EXIT_STATE: Final = 3
"""The state directory cannot be used: missing, not a directory, not installed, damaged."""
TIMEOUT_STATUS: Final = 124
"""A simulated timeout (a fault), as ``timeout(1)`` exits."""
EXIT_PIPE: Final = 141
"""Stdout was closed before the answer was printed (``squeue | head -0``): 128 + SIGPIPE, what
a shell reports for a real Slurm command killed by that signal."""

SERVED: Final = ("sbatch", "squeue", "sacct", "scancel", "scontrol")
"""The Slurm commands the simulator answers."""
REFUSED: Final = (
    "sacctmgr",
    "salloc",
    "sattach",
    "sbcast",
    "scrontab",
    "sdiag",
    "sinfo",
    "sprio",
    "sreport",
    "srun",
    "sshare",
    "sstat",
    "strigger",
    "sview",
)
"""Slurm 22.05's other client commands: shims that refuse them, so none reaches a real Slurm."""

ROOT: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LENGTH: Final = 8


class ShimError(Exception):
    """A call that cannot be made: ``text`` is its one-line reason, ``status`` its exit status."""

    def __init__(self, text: str, status: int = EXIT_STATE) -> None:
        super().__init__(text)
        self.text = text
        self.status = status


def refusal(program: str) -> str:
    """The line a shim of a command the simulator does not answer prints (and exits 1)."""
    return (
        f"{PROG}: {program} is not simulated; this simulated cluster answers "
        f"{', '.join(SERVED[:-1])} and {SERVED[-1]} only"
    )


def main(argv: list[str] | None = None) -> int:
    """``--state-dir DIR PROGRAM ARGS...``: what every shim runs; ``ACTION --state-dir DIR ...``:
    what ``BIN/dispatch-slurm-shims`` runs (the server parses and answers the action)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--state-dir":
        if len(args) < 3:
            sys.stderr.write(f"{PROG}: a shim runs '--state-dir DIR PROGRAM [ARGS...]'\n")
            return EXIT_USAGE
        return shim(args[1], args[2], args[3:])
    return manage(args)


def manage(args: list[str]) -> int:
    """An action of ``dispatch-slurm-shims`` on a running cluster, answered by its server;
    ``install``, ``--help`` and what names no ``--state-dir`` run the whole command instead."""
    state_dir = _state_dir(args)
    helps = ("-h", "--help")
    if not args or args[0] == "install" or state_dir is None or any(a in helps for a in args):
        return _whole_command(args)
    try:
        if args[0] == "stop":
            stop(state_dir)
            return 0
        reply = request(state_dir, {"kind": "cli", "argv": args})
    except ShimError as error:
        sys.stderr.write(f"{PROG}: {error.text}\n")
        return error.status
    return print_reply(reply)


def _state_dir(args: list[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--":
            return None
        if arg == "--state-dir" or arg.startswith("--state-dir="):
            value = arg.partition("=")[2] if "=" in arg else "".join(args[index + 1 : index + 2])
            return os.path.abspath(value) if value else None  # none: the whole command says
    return None


def _whole_command(args: list[str]) -> int:
    """``python -m simulators.slurm.shims ARGS``: its exit status."""
    import subprocess

    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))
    return subprocess.call([sys.executable, "-P", "-m", "simulators.slurm.shims", *args], env=env)


def shim(state_dir: str, program: str, args: list[str]) -> int:
    """Run one Slurm command on the cluster of ``state_dir``; print what it printed."""
    if program not in (*SERVED, *REFUSED):  # BIN/dispatch-slurm-shims --state-dir DIR advance
        sys.stderr.write(
            f"{PROG}: usage: the action comes first, then its options: '{PROG} ACTION "
            f"--state-dir DIR ...' (see '{PROG} --help')\n"
        )
        return EXIT_USAGE
    if program not in SERVED:
        sys.stderr.write(refusal(program) + "\n")
        return EXIT_REFUSED
    try:
        cwd = os.getcwd()
    except OSError:  # the caller's directory is gone: what its shell says it is
        cwd = os.environ.get("PWD", "/")
    message = {
        "kind": "slurm",
        "program": program,
        "args": args,
        "env": dict(os.environ),
        "cwd": cwd,
    }
    try:
        reply = request(state_dir, message, stdin=_stdin)
    except ShimError as error:
        sys.stderr.write(f"{PROG}: {error.text}\n")
        return error.status
    return print_reply(reply)


def print_reply(reply: dict[str, Any]) -> int:
    """Print an answer's output; return its exit status."""
    closed = False
    for stream, key in ((sys.stdout, "stdout"), (sys.stderr, "stderr")):
        text = reply.get(key) or ""
        if text:
            try:
                stream.flush()
                stream.buffer.write(text.encode("utf-8", "surrogateescape"))
                stream.buffer.flush()
            except BrokenPipeError:  # ``squeue | head -0``: the reader went away
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
                closed = True
    status: int = reply.get("status", EXIT_STATE)
    return EXIT_PIPE if closed else status


def _stdin() -> str:
    return sys.stdin.buffer.read().decode("utf-8", "surrogateescape")


# -- the round trip ----------------------------------------------------------------------------


def request(
    state_dir: str, message: dict[str, Any], stdin: Callable[[], str] | None = None
) -> dict[str, Any]:
    """Send ``message`` to the server of ``state_dir`` (starting one if none runs) and return its
    answer; ``stdin`` gives sbatch's script when the server asks for it."""
    for _ in range(5):
        sock = connect(state_dir) or _start(state_dir)
        try:
            send(sock, message)
            reply = receive(sock)
        except OSError as error:
            raise ShimError(_died(state_dir, error.strerror or str(error))) from None
        finally:
            sock.close()
        if reply is None:
            raise ShimError(_died(state_dir, "no answer"))
        if reply.get("need") == "stdin" and "stdin" not in message:
            # Read while no connection is open: the server answers others meanwhile, so a
            # caller that feeds several shims' stdin one after the other never deadlocks.
            message = dict(message, stdin=stdin() if stdin is not None else "")
            continue
        if not reply.get("restart"):
            return reply
    raise ShimError(f"the simulator server of {state_dir} keeps restarting (see its {LOG_FILE})")


def _died(state_dir: str, why: str) -> str:
    log = os.path.join(state_dir, LOG_FILE)
    return f"the simulator server of {state_dir} stopped before answering ({why}; see {log})"


def connect(state_dir: str) -> _socket.socket | None:
    """A connection to the running server of ``state_dir``, or None when none is listening."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        # The socket's name is relative to the state directory: a long path would not fit in
        # sun_path (108 bytes). The caller's directory is kept and returned to.
        here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
        try:
            try:
                os.chdir(state_dir)
            except OSError as error:
                raise ShimError(_unusable(state_dir, error)) from None
            try:
                sock.connect(SOCKET_FILE)
            finally:
                os.fchdir(here)
        finally:
            os.close(here)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except ShimError:
        sock.close()
        raise
    except OSError as error:
        sock.close()
        raise ShimError(f"cannot reach the simulator server of {state_dir}: {error}") from None
    return sock


def _unusable(state_dir: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"no simulated cluster in {state_dir}: no such directory"
    if isinstance(error, NotADirectoryError):
        return f"state dir {state_dir} is not a directory"
    named = isinstance(error.filename, str) and error.filename != state_dir
    name = f": {error.filename}" if named else ""  # the file in it that cannot be used
    return f"cannot use state dir {state_dir}{name}: {error.strerror or error}"


def _start(state_dir: str) -> _socket.socket:
    """Start the server of ``state_dir`` unless another call just did; connect to it."""
    trace = os.path.join(state_dir, STATE_FILE)
    if not os.path.isfile(trace):
        if os.path.isdir(state_dir):
            raise ShimError(
                f"no simulated cluster in {state_dir}: no {STATE_FILE} "
                f"(run '{PROG} install --state-dir {state_dir} --bin-dir BIN')"
            )
        raise ShimError(_unusable(state_dir, FileNotFoundError()))
    import fcntl

    try:
        lock = os.open(os.path.join(state_dir, START_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise ShimError(_unusable(state_dir, error)) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = connect(state_dir)  # another call may have started it meanwhile
        if sock is None:
            _spawn(state_dir)
            sock = connect(state_dir)
        if sock is None:
            raise ShimError(f"the simulator server of {state_dir} started but does not listen")
        return sock
    finally:
        os.close(lock)


def _spawn(state_dir: str) -> None:
    """Start the server and wait until it listens (or says why it cannot)."""
    import subprocess

    log_path = os.path.join(state_dir, LOG_FILE)
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as error:
        raise ShimError(_unusable(state_dir, error)) from None
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))
    command = [sys.executable, "-P", "-m", "simulators.slurm.shims", "--state-dir"]
    try:
        server = subprocess.Popen(
            [*command, os.path.abspath(state_dir), "serve"],
            cwd=state_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
    finally:
        os.close(log)
    assert server.stdout is not None
    with server.stdout:
        line = server.stdout.readline().decode("utf-8", "replace").rstrip("\n")
    if line == "ready":
        return
    if line.startswith("error "):
        server.wait()
        raise ShimError(line[len("error ") :], EXIT_STATE)
    status = server.wait()
    raise ShimError(
        f"the simulator server of {state_dir} did not start (exit status {status}; see {log_path})"
    )


def stop(state_dir: str) -> bool:
    """Stop the server of ``state_dir`` if one runs (it has stopped when this returns True)."""
    sock = connect(state_dir)
    if sock is None:
        return False
    try:
        send(sock, {"kind": "stop"})
        receive(sock)
    except OSError:
        pass  # a stopping server may drop the connection before it replies: the lock tells
    finally:
        sock.close()
    # The server holds DIR/lock for its life: once we get it, the server is gone.
    import fcntl

    lock = os.open(os.path.join(state_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    finally:
        os.close(lock)
    return True


# -- framing -----------------------------------------------------------------------------------


def send(sock: _socket.socket, message: dict[str, Any]) -> None:
    data = marshal.dumps(message)
    sock.sendall(len(data).to_bytes(_LENGTH, "big") + data)


def receive(sock: _socket.socket) -> dict[str, Any] | None:
    """The next message, or None if the other side closed the connection first."""
    head = _exactly(sock, _LENGTH)
    if head is None:
        return None
    body = _exactly(sock, int.from_bytes(head, "big"))
    if body is None:
        return None
    message: dict[str, Any] = marshal.loads(body)
    return message


def _exactly(sock: _socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
