"""Every command's exit code, and the one place where a command's failure becomes a line and a code.

* 0 — success; a server (``run``, ``sim serve``, ``sim world``) stopped by SIGINT or SIGTERM;
* 1 — the input was read but is wrong (a DGD admission refuses, a config key misspelt or with a bad value), or
  the run failed its goal (a DGD not successful, an invariant or expectation broken, the cluster
  unreachable);
* 2 — usage: a bad option, or a named file that cannot be read as what it should be (missing, a
  folder, not permitted, not UTF-8, not YAML or JSON, not a trace) or written;
* 130 — interrupted (Ctrl-C) before the command finished.

Commands raise :class:`Usage` or :class:`Invalid` with a sentence that names the file, field and
value; :func:`run_command` prints it as ``<command>: error: <sentence>`` on stderr and returns the
code. Ctrl-C prints ``<command>: interrupted`` and nothing else (:mod:`dgd.cli.interrupt`); a
reader that goes away (``| head``) ends the command quietly. No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import ClassVar

from dgd.cli.interrupt import CtrlC
from dgd.cluster.errors import ClusterError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: What 2 and 130 mean, the same in every command.
_USAGE_AND_INTERRUPT = (
    "2 usage error, or a file that cannot be read or written (missing, not UTF-8, not YAML); "
    "130 interrupted (Ctrl-C)"
)
#: The top-level ``--help``'s summary of the table above.
EXIT_CODES = (
    f"exit codes: 0 success; 1 the input is invalid or the run failed its goal; {_USAGE_AND_INTERRUPT}"
)


class CommandError(Exception):
    """A problem the user can act on; the message is a sentence naming the file, field and value."""

    code: ClassVar[int] = EXIT_FAILED


class Usage(CommandError):
    """A bad option, or a file that cannot be read or written: exit 2."""

    code = EXIT_USAGE


class Invalid(CommandError):
    """Input that was read but is wrong, or a run that failed its goal: exit 1."""

    code = EXIT_FAILED


def wire(
    parser: argparse.ArgumentParser,
    run: Callable[[argparse.Namespace], int],
    *,
    ok: str,
    failed: str | None = None,
) -> None:
    """Make ``parser``'s command call ``run`` through :func:`run_command`; its ``--help`` ends with its exit
    codes: 0 ``ok``, 1 ``failed`` (if it can fail), and the shared 2 and 130."""
    one = f"1 {failed}; " if failed else ""
    parser.epilog = f"exit codes: 0 {ok}; {one}{_USAGE_AND_INTERRUPT}"
    # ``command_parser``: so an option it does not have is refused with its own usage (``main``).
    parser.set_defaults(run=run, prog=parser.prog, command_parser=parser)


def run_command(args: argparse.Namespace) -> int:
    """Run the command ``args`` names (``args.run``, shown as ``args.prog``); its exit code."""
    with CtrlC() as ctrl_c:
        try:
            code: int = args.run(args)
        except CommandError as exc:
            print(f"{args.prog}: error: {exc}", file=sys.stderr)
            return exc.code
        except BrokenPipeError:
            # The reader went away (``| head``): stop quietly, as other command-line tools do; stdout
            # is pointed at /dev/null so the interpreter's last flush does not fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILED
        except BaseException as exc:
            if not ctrl_c.ended(exc):
                raise
            # On a terminal the ^C echo has left the cursor mid-line.
            start = "\n" if sys.stderr.isatty() else ""
            print(f"{start}{args.prog}: interrupted", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
    return code


def log_to_stderr(level: int) -> None:
    """The simulation commands' logging: ``level`` and above, one line each, on stderr."""
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def cluster_problem(exc: ClusterError) -> str:
    """What a cluster error says, without the client-side reason code (``ConfigError (500)``); an
    API server's own answer keeps its reason (``Forbidden, 403``)."""
    what = f"{exc.subject}: {exc.message}" if exc.subject else exc.message
    if exc.reason in ("InternalError", "ConfigError"):
        return what or exc.reason
    return f"{what} (the API server answered {exc.reason}, {exc.code})"


_MSGSPEC_PATH = re.compile(r"^(?P<what>.*) - at `\$\.?(?P<path>[^`]*)`$", re.DOTALL)


def field_problem(message: str) -> str:
    """msgspec's ``Expected `float` >= 0.0 - at `$.ready_delay``` as ``ready_delay: expected float >= 0.0``
    (other messages as they are)."""
    found = _MSGSPEC_PATH.match(message)
    what = (found.group("what") if found else message).replace("`", "")
    what = what[:1].lower() + what[1:]
    return f"{found.group('path')}: {what}" if found and found.group("path") else what
