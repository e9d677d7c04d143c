"""``dispatch-kube-sim``: run the simulated Kubernetes API server, or move its virtual clock.

``serve --port N --kubeconfig PATH [--kueue] [--realtime] [--seed S]`` serves until
interrupted (SIGINT or SIGTERM) and writes a kubeconfig for kubectl and the official client;
``advance SECONDS [--url URL | --kubeconfig PATH]`` asks a running server to move its clock
(``POST /sim/v1/advance``). Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

USAGE_ERROR = 2
_OURS = b"apiVersion: v1\nkind: Config\nclusters:\n- name: kube-sim\n"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"dispatch-kube-sim: {message}\n")
        raise SystemExit(USAGE_ERROR)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"dispatch-kube-sim: {message}\n")
    raise SystemExit(USAGE_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dispatch-kube-sim",
        description="A deterministic simulated Kubernetes API server (Trainer, JobSet, Job, "
        "kubelet and Kueue controllers on a virtual clock) for kubectl and the official client.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    serve = sub.add_parser(
        "serve",
        help="serve the API on 127.0.0.1 until interrupted",
        description="Serve the simulated API on 127.0.0.1 until SIGINT or SIGTERM.",
    )
    serve.add_argument(
        "--port", type=int, default=0, help="TCP port on 127.0.0.1 (default 0: a free port)"
    )
    serve.add_argument(
        "--kubeconfig",
        required=True,
        metavar="PATH",
        help="write a kubeconfig for this server here (cluster, user {}, namespace default)",
    )
    serve.add_argument("--kueue", action="store_true", help="install Kueue (queues and quota)")
    serve.add_argument(
        "--realtime",
        action="store_true",
        help="let the virtual clock follow the wall clock (default: it moves only by 'advance')",
    )
    serve.add_argument(
        "--seed", type=int, default=0, help="seed of uids and generated names (default 0)"
    )
    advance = sub.add_parser(
        "advance",
        help="move a running server's virtual clock forward",
        description="Move a running server's virtual clock forward by SECONDS; prints the "
        "new virtual time.",
    )
    advance.add_argument("seconds", type=float, metavar="SECONDS", help="seconds to move (>= 0)")
    where = advance.add_mutually_exclusive_group()
    where.add_argument("--url", help="the server's URL (http://127.0.0.1:PORT)")
    where.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="read the server's URL from this kubeconfig (default: $KUBECONFIG)",
    )
    return parser


def _server_of(kubeconfig: str) -> str:
    try:
        text = Path(kubeconfig).read_text()
    except OSError as exc:
        _fail(f"cannot read kubeconfig {kubeconfig}: {exc.strerror}")
    found = re.search(r"^\s*server:\s*(\S+)\s*$", text, re.MULTILINE)
    if found is None:
        _fail(f"no 'server:' in kubeconfig {kubeconfig}")
    return found.group(1).strip("'\"")


def _ours_or_absent(target: Path) -> None:
    """Refuse a ``--kubeconfig`` that is a directory, or a file this command did not write (an
    empty one excepted): ``--kubeconfig ~/.kube/config`` must not replace a real kubeconfig."""
    if target.is_dir():
        _fail(f"--kubeconfig {target} is a directory: give the path of a file")
    if not target.exists() and not target.is_symlink():
        return
    try:
        with open(target, "rb") as handle:
            head = handle.read(len(_OURS))
    except OSError as exc:
        _fail(f"--kubeconfig {target}: cannot read it: {exc.strerror or exc}")
    if target.is_symlink() or not target.is_file() or head not in (b"", _OURS):
        _fail(
            f"--kubeconfig {target} exists and was not written by dispatch-kube-sim: refusing "
            "to replace it (give a new path)"
        )


def _write_whole(target: Path, text: str) -> None:
    """``text`` into ``target`` whole: a temporary file beside it, then renamed over it."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _serve(args: argparse.Namespace) -> int:
    from simulators.kubernetes.config import KubeConfig
    from simulators.kubernetes.server import Server, kubeconfig_text
    from simulators.kubernetes.sim import KubeSim

    if not 0 <= args.port <= 65535:
        _fail(f"--port must be 0..65535, not {args.port}")
    if not args.kubeconfig.strip():
        _fail("--kubeconfig is empty: give the path of the kubeconfig to write")
    target = Path(args.kubeconfig)
    try:
        if not target.parent.is_dir():
            _fail(f"--kubeconfig: no directory {target.parent}")
        _ours_or_absent(target)
    except OSError as exc:  # a name too long, a loop of symbolic links
        _fail(f"--kubeconfig {target}: {exc.strerror or exc}")
    sim = KubeSim(KubeConfig(kueue=args.kueue), seed=args.seed)
    server = Server(sim, port=args.port, realtime=args.realtime)
    try:
        server.start()
    except OSError as exc:
        _fail(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}")
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    try:
        try:
            _write_whole(target, kubeconfig_text(server.url))
        except OSError as exc:
            _fail(f"cannot write --kubeconfig {target}: {exc.strerror or exc}")
        print(f"serving {server.url} (kubeconfig {target})", flush=True)
        done.wait()
    finally:
        server.stop()
    return 0


def _advance(args: argparse.Namespace) -> int:
    if not (math.isfinite(args.seconds) and args.seconds >= 0):
        _fail(f"SECONDS must be a number >= 0, not {args.seconds}")
    if args.url:
        url = args.url
    else:
        kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG", "")
        if not kubeconfig:
            _fail("advance needs --url or --kubeconfig (or $KUBECONFIG)")
        url = _server_of(kubeconfig.split(os.pathsep)[0])
    body = json.dumps({"seconds": args.seconds}).encode()
    try:
        request = urllib.request.Request(
            f"{url.rstrip('/')}/sim/v1/advance",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            now = json.loads(answer.read())["now"]
    except urllib.error.HTTPError as exc:
        _fail(f"the server refused: {exc.code} {exc.reason}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        _fail(f"cannot reach {url}: {getattr(exc, 'reason', exc)}")
    print(now)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "advance":
        return _advance(args)
    parser.print_help(sys.stderr)
    return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
