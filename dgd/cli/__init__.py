"""The ``dgd-operator`` command: one module per command family, wired here.

* :mod:`dgd.cli.manifests` — ``validate``, ``convert``, ``render``, ``crds`` (offline, over files);
* :mod:`dgd.cli.run` — ``run``, the daemon;
* :mod:`dgd.cli.sim`, :mod:`dgd.cli.replay`, :mod:`dgd.cli.serve`, :mod:`dgd.cli.world` — the simulation;
* :mod:`dgd.cli.chaos` — chaos campaigns.

Exit codes: 0 success, 1 invalid input or a failed check, 2 usage error. Bad input never ends in a
traceback: every problem is printed with its file, document index, field path and what is allowed.
This package is the only one that imports ``dgd.daemon`` and ``dgd.sim``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dgd import __version__
from dgd.cli.chaos import add_command as add_chaos_command
from dgd.cli.manifests import EXIT_USAGE
from dgd.cli.manifests import add_commands as add_manifest_commands
from dgd.cli.run import add_command as add_run_command
from dgd.cli.serve import add_commands as add_serve_commands
from dgd.cli.sim import add_commands as add_sim_commands
from dgd.cli.world import add_commands as add_world_commands


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    code: int = args.run(args)
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dgd-operator",
        description="Kubernetes operator for NVIDIA Dynamo DynamoGraphDeployments, and its tools.",
        epilog="Exit codes: 0 success, 1 invalid input or failed check, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"dgd-operator {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    add_manifest_commands(commands)
    add_run_command(commands)
    add_chaos_command(commands)
    add_sim_commands(commands)
    add_serve_commands(commands)
    add_world_commands(commands)
    return parser


if __name__ == "__main__":
    sys.exit(main())
