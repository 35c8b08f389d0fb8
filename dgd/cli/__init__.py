"""The ``dgd-operator`` command: one module per command family, wired here.

* :mod:`dgd.cli.manifests` — ``validate``, ``convert``, ``render``, ``crds`` (offline, over files);
* :mod:`dgd.cli.run` — ``run``, the daemon;
* :mod:`dgd.cli.sim`, :mod:`dgd.cli.replay`, :mod:`dgd.cli.serve`, :mod:`dgd.cli.world` — the simulation;
* :mod:`dgd.cli.chaos` — chaos campaigns.

Every command runs through :func:`dgd.cli.exits.run_command` and reads its files through
:mod:`dgd.cli.inputs`: the same exit codes everywhere (0 success, 1 invalid input or a failed goal, 2
usage error or a file that cannot be read, 130 interrupted), and bad input or Ctrl-C never ends in a
traceback: every problem is one sentence naming the file, document, field and value.
This package is the only one that imports ``dgd.daemon`` and ``dgd.sim``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from dgd import __version__
from dgd.cli.exits import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, run_command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = _parser(arguments[0] if arguments else None)
    except KeyboardInterrupt:
        # Importing the commands takes a second or two: Ctrl-C may come before any of them runs.
        print("dgd-operator: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    args, extras = parser.parse_known_args(arguments)
    # A command's own parser answers an option it does not have (its usage, not the top level's).
    command_parser: argparse.ArgumentParser = vars(args).pop("command_parser", parser)
    if extras:
        command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return run_command(args)


#: Each command family's module (under ``dgd.cli``) and the commands it adds.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "manifests": ("validate", "convert", "render", "crds"),
    "run": ("run",),
    "chaos": ("chaos",),
    "sim": ("sim",),  # ``sim`` and its subcommands: apply, replay (cli_sim), serve, world
}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; when ``command`` names one, with that command's family alone, so that ``run`` (the
    daemon) does not import the simulation, the chaos campaigns and the offline tools it never uses
    (issue 18: about 2.5 MiB of the daemon's baseline). Any other first argument (none, an option, a
    typo) gets every command, so help and usage errors list them all."""
    # The command modules are imported here, not at the top, so that importing them is interruptible.
    families = [f for f, names in _FAMILIES.items() if command in names] or list(_FAMILIES)
    parser = argparse.ArgumentParser(
        prog="dgd-operator",
        description="Kubernetes operator for NVIDIA Dynamo DynamoGraphDeployments, and its tools.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"dgd-operator {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for family in families:
        _add_family(family, commands)
    return parser


def _add_family(family: str, commands: Any) -> None:
    if family == "manifests":
        from dgd.cli.manifests import add_commands as add_manifest_commands

        add_manifest_commands(commands)
    elif family == "run":
        from dgd.cli.run import add_command as add_run_command

        add_run_command(commands)
    elif family == "chaos":
        from dgd.cli.chaos import add_command as add_chaos_command

        add_chaos_command(commands)
    else:
        from dgd.cli.serve import add_commands as add_serve_commands
        from dgd.cli.sim import add_commands as add_sim_commands
        from dgd.cli.world import add_commands as add_world_commands

        add_sim_commands(commands)
        add_serve_commands(commands)
        add_world_commands(commands)


if __name__ == "__main__":
    sys.exit(main())
