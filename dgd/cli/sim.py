"""The ``dgd-operator sim`` commands: the whole operator on the embedded simulated cluster.

``sim apply FILE...`` starts a ``SimulatedCluster`` (its API server, simulated Grove, scheduler and
kubelets) with the operator's actor tree beside it, stores every document of the files (v1alpha1
DGDs converted to v1beta1, other kinds as they are), and watches the DGDs: a status table is printed
whenever a row changes (redrawn in place on a terminal), then each DGD's final status and events.

Time is the simulation's: virtual by default (minutes of cluster time take milliseconds, and the same
seed replays the same run), real with ``--realtime``. ``--until-ready`` stops as soon as every DGD is
``successful`` (or every DGD has settled, successful or failed, for a minute); otherwise the run lasts
``--timeout`` seconds of cluster time. ``-`` reads the manifests from standard input. Exit 0 when
every DGD ends ``successful``, 1 otherwise (each failed or unready DGD is named with its Ready reason
and message) or when the input is not objects the simulated cluster accepts, 2 for usage errors and
files that cannot be read, 130 when interrupted (:mod:`dgd.cli.exits`).

Like ``cli.py``, this module is the command line: it is allowed to import ``dgd.sim``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
import msgspec
import yaml

from dgd.cli.exits import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_OK,
    Invalid,
    Usage,
    cluster_problem,
    log_to_stderr,
    wire,
)
from dgd.cli.inputs import add_config_flag, read_config, read_manifests, shown, writable, write_output
from dgd.cli.replay import add_command as add_replay_command
from dgd.cluster.errors import ClusterError, RequestEntityTooLarge
from dgd.cluster.resources import DEFAULT_RESOURCES, DGD, EVENT, Resource
from dgd.daemon.logs import FORMATS, LEVELS, configure
from dgd.domain.admission.schema import check
from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from dgd.domain.gates import GateError
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import API_VERSION_V1ALPHA1, KIND, DynamoGraphDeployment
from dgd.messages.meta_validation import annotation_problems, request_too_large
from dgd.messages.trace import write_trace
from dgd.messages.v1alpha1 import DynamoGraphDeploymentV1Alpha1
from dgd.sim import SimulatedCluster, WorldSettings, run
from dgd.sim.operator import simulated_operator
from dgd.sim.trace_recorder import TraceRecorder

#: ``sim apply --help``.
APPLY = (
    "Start the simulated cluster (an in-memory API server, simulated Grove, scheduler and kubelets) "
    "with the whole operator beside it, store every document of the files (v1alpha1 DGDs converted to "
    "v1beta1, other kinds as they are), and watch the DGDs: a status table is printed whenever a row "
    "changes (redrawn in place on a terminal), then each DGD's final status and events. Time is "
    "virtual by default (minutes of cluster time take milliseconds, and the same --seed replays the "
    "same run), real with --realtime. --until-ready stops as soon as every DGD is successful (or every "
    "DGD has settled, successful or failed, for a minute); otherwise the run lasts --timeout seconds of "
    "cluster time. '-' reads the manifests from standard input."
)

#: Cluster seconds every DGD must keep its final state for ``--until-ready`` to stop on a failure.
SETTLED = 60.0

_BY_KIND: dict[tuple[str, str], Resource[Any]] = {(r.api_version, r.kind): r for r in DEFAULT_RESOURCES}


def add_commands(commands: Any) -> None:
    """Add ``sim`` and its subcommands to the ``dgd-operator`` parser."""
    sim = commands.add_parser(
        "sim",
        help="run the operator on the embedded simulated cluster",
        description="Run the whole operator, in one process, against a simulated Kubernetes cluster.",
        epilog=f"{EXIT_CODES} (each command's --help says what 0 and 1 mean for it)",
    )
    sim_commands = sim.add_subparsers(dest="sim_command", metavar="COMMAND", required=True)
    apply = sim_commands.add_parser(
        "apply",
        help="apply manifests to a simulated cluster and watch the DGDs converge",
        description=APPLY,
    )
    apply.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="manifest file (multi-document YAML or JSON), or - for standard input",
    )
    apply.add_argument("--until-ready", action="store_true", help="stop once every DGD is successful")
    apply.add_argument(
        "--timeout", type=float, default=600.0, metavar="SECONDS", help="cluster seconds to run (default 600)"
    )
    apply.add_argument("--realtime", action="store_true", help="run in real time instead of virtual time")
    apply.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the simulation (default 0)")
    add_config_flag(apply)
    apply.add_argument(
        "--record", metavar="FILE", type=Path, help="record what happened as a trace (see sim replay)"
    )
    apply.add_argument(
        "--log-level",
        choices=LEVELS,
        help="log the operator's lines at this level and above on stderr (info: each write it makes and "
        "why, and each status transition; default: errors only)",
    )
    apply.add_argument("--log-format", choices=FORMATS, default="text", help="log line format (default text)")
    wire(
        apply,
        _apply,
        ok="every DGD successful",
        failed="a DGD failed or timed out, or the simulated cluster refused the input",
    )
    add_replay_command(sim_commands)


def subcommands(commands: Any) -> Any:
    """The subcommands of ``sim`` in the ``dgd-operator`` subcommands (argparse keeps no public handle)."""
    sim = commands.choices["sim"]
    return next(action for action in sim._actions if isinstance(action, argparse._SubParsersAction))


def _documents(files: Sequence[str]) -> list[dict[str, Any]]:
    """Every document of ``files``, v1alpha1 DGDs converted, each in a namespace (``default`` if none)."""
    documents: list[dict[str, Any]] = []
    for name in files:
        for index, document in enumerate(read_manifests(name)):
            where = f"{shown(name)}#{index}"
            if not isinstance(document, dict) or not document.get("kind"):
                raise Invalid(f"{where}: not a Kubernetes object (it has no kind)")
            if document.get("kind") == KIND and document.get("apiVersion") == API_VERSION_V1ALPHA1:
                document = _converted(document, where)
            metadata = document.setdefault("metadata", {})
            if isinstance(metadata, dict):
                metadata.setdefault("namespace", "default")
            documents.append(document)
    if not any(d.get("kind") == KIND for d in documents):
        raise Invalid(f"no {KIND} in {', '.join(shown(name) for name in files)}")
    return documents


def _converted(document: dict[str, Any], where: str) -> dict[str, Any]:
    """A v1alpha1 DGD as v1beta1, after it is decoded as strictly as the API server decodes it (kubectl
    asks for strict field validation): conversion would drop an unknown field such as a typo silently."""
    problems = check(document, DynamoGraphDeploymentV1Alpha1)
    if problems:
        name = (
            (document.get("metadata") or {}).get("name")
            if isinstance(document.get("metadata"), dict)
            else None
        )
        said = "; ".join(str(problem) for problem in problems)
        raise Invalid(f"{where} {KIND} {name or '<no name>'} is invalid: {said}")
    try:
        return dgd_to_v1beta1(document)
    except ConversionError as exc:
        raise Invalid(f"{where}: {exc}") from None


def _apply(args: argparse.Namespace) -> int:
    if args.log_level is None:
        log_to_stderr(logging.ERROR)
    else:
        configure(args.log_format, args.log_level)  # as `run` logs: the writes' fields as fields
    if args.timeout <= 0:
        raise Usage(f"--timeout: {args.timeout:g} must be positive")
    session = _Session(
        _documents(args.files),
        config=read_config(args.config),
        seed=args.seed,
        timeout=args.timeout,
        until_ready=args.until_ready,
        record=writable(args.record, "--record"),
    )
    try:
        return run(session.main, virtual=not args.realtime)
    except GateError as exc:
        raise Invalid(f"the operator cannot start: {exc}") from None
    except ClusterError as exc:
        # The simulated API server refused what the files ask it to set up (e.g. a namespace name).
        raise Invalid(f"the simulated cluster refused the input: {cluster_problem(exc)}") from None


def _too_large(document: dict[str, Any]) -> str:
    """What makes a document too large for the API server to read, said after its 413, as ``validate``
    says it: the document's size, and annotations over their own limit (which the server, refusing the
    request unread, never names)."""
    said = f"; {request_too_large(str(document.get('kind')), len(msgspec.json.encode(document)))}"
    annotations = document["metadata"].get("annotations") or {}
    texts = {key: value for key, value in annotations.items() if isinstance(value, str)}
    sizes = [
        f"; {field}: {why}" for field, why in annotation_problems(texts) if field == "metadata.annotations"
    ]
    return said + "".join(sizes)


class _Row(msgspec.Struct, frozen=True):
    name: str
    state: str
    reason: str
    components: str


def _row(dgd: DynamoGraphDeployment) -> _Row:
    status = dgd.status
    ready = next((c for c in (status.conditions if status else None) or () if c.type == "Ready"), None)
    components = dgd.spec.components or []
    observed = (status.components if status else None) or {}
    done = 0
    for component in components:
        seen = observed.get(component.name)
        desired = component.replicas if component.replicas is not None else 1
        if seen is None:
            continue
        count = seen.ready_replicas if seen.ready_replicas is not None else (seen.available_replicas or 0)
        if count >= desired and seen.updated_replicas >= desired:
            done += 1
    return _Row(
        f"{dgd.metadata.namespace}/{dgd.metadata.name}",
        status.state if status else "initializing",
        ready.reason if ready is not None else "-",
        f"{done}/{len(components)}",
    )


class _Table:
    """The live status table: printed again whenever a row changes (in place on a terminal)."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._last: list[_Row] = []
        self._lines = 0
        self._tty = out.isatty()

    def show(self, rows: list[_Row], elapsed: float) -> None:
        if rows == self._last:
            return
        self._last = rows
        widths = [max(len(h), *(len(getattr(r, f)) for r in rows)) for h, f in _COLUMNS]
        lines = [
            f"t={elapsed:>6.0f}s  "
            + "  ".join(h.ljust(w) for (h, _), w in zip(_COLUMNS, widths, strict=True))
        ]
        for row in rows:
            cells = [getattr(row, f).ljust(w) for (_, f), w in zip(_COLUMNS, widths, strict=True)]
            lines.append("          " + "  ".join(cells))
        if self._tty and self._lines:
            self._out.write(f"\x1b[{self._lines}F\x1b[J")
        self._out.write("\n".join(lines) + "\n")
        self._out.flush()
        self._lines = len(lines)


_COLUMNS = (("NAME", "name"), ("STATE", "state"), ("READY REASON", "reason"), ("COMPONENTS", "components"))


class _Session:
    """One ``sim apply`` run."""

    def __init__(
        self,
        documents: list[dict[str, Any]],
        *,
        config: OperatorConfig,
        seed: int,
        timeout: float,
        until_ready: bool,
        record: Path | None = None,
    ) -> None:
        self._documents = documents
        self._config = config
        self._seed = seed
        self._timeout = timeout
        self._until_ready = until_ready
        self._record = record
        self._out = sys.stdout
        namespaces = sorted({str(d["metadata"].get("namespace") or "default") for d in documents})
        self._settings = WorldSettings(namespaces=tuple(namespaces))
        self._sim = simulated_operator(self._settings, seed=seed, config=config)

    async def main(self) -> int:
        code = EXIT_FAILED
        async with self._sim as sim, anyio.create_task_group() as group:
            recorder = None
            if self._record is not None:
                recorder = TraceRecorder(
                    sim, seed=self._seed, settings=self._settings, config=self._config,
                    description="recorded by dgd-operator sim apply",
                )  # fmt: skip
                await recorder.start(group)
            code = await self._run(sim)
            if recorder is not None and self._record is not None:
                listed = (await sim.cluster.client().list(DGD.as_raw())).items
                write_output(self._record, write_trace(recorder.trace(listed)), flag="--record")
            group.cancel_scope.cancel()
        return code

    async def _run(self, sim: SimulatedCluster) -> int:
        names = await self._store(sim)
        if names is None:
            return EXIT_FAILED
        table = _Table(self._out)
        settled_since: float | None = None
        last: list[_Row] = []
        while True:
            dgds = [await sim.cluster.get(DGD.key(ns, name)) for ns, name in names]
            rows = [_row(d) for d in dgds]
            table.show(rows, sim.elapsed())
            states = {row.state for row in rows}
            if self._until_ready:
                if states == {"successful"}:
                    break
                final = states <= {"successful", "failed"}
                settled_since = (settled_since if rows == last else sim.elapsed()) if final else None
                if settled_since is not None and sim.elapsed() - settled_since >= SETTLED:
                    break
            last = rows
            if sim.elapsed() >= self._timeout:
                break
            await sim.run_for(1.0)
        return await self._report(sim, dgds)

    async def _store(self, sim: SimulatedCluster) -> list[tuple[str, str]] | None:
        names: list[tuple[str, str]] = []
        for document in self._documents:
            kind, api_version = document.get("kind"), document.get("apiVersion")
            meta = document["metadata"]
            resource = _BY_KIND.get((str(api_version), str(kind)))
            if resource is None and str(api_version).startswith("nvidia.com/"):
                # As validate and kubectl: a Dynamo kind in a version nobody serves is an error, not a skip.
                print(
                    f'dgd-operator sim apply: error: no matches for kind "{kind}" in version "{api_version}"',
                    file=sys.stderr,
                )
                return None
            if resource is None:
                why = f"the simulated cluster does not serve {api_version} {kind}"
                print(f"skipped {kind} {meta.get('name')}: {why}", file=sys.stderr)
                continue
            try:
                await sim.cluster.create(resource.as_raw(), document)
            except ClusterError as exc:
                problem = cluster_problem(exc)
                if isinstance(exc, RequestEntityTooLarge):
                    problem += _too_large(document)
                refused = problem if exc.subject else f"{kind} {meta.get('name')}: {problem}"
                print(
                    f"dgd-operator sim apply: error: the simulated cluster refused {refused}", file=sys.stderr
                )
                return None
            if kind == KIND:
                names.append((str(meta["namespace"]), str(meta["name"])))
        return names

    async def _report(self, sim: SimulatedCluster, dgds: list[DynamoGraphDeployment]) -> int:
        out = self._out
        events = sorted(
            (await sim.cluster.list(EVENT)).items, key=lambda e: int(e.metadata.resource_version or 0)
        )
        failed: list[str] = []
        for dgd in dgds:
            where = f"{dgd.metadata.namespace}/{dgd.metadata.name}"
            status = msgspec.to_builtins(dgd.status) if dgd.status is not None else {}
            out.write(f"\n{KIND} {where} (after {sim.elapsed():.0f}s of cluster time)\n")
            out.write(yaml.safe_dump({"status": status}, sort_keys=False, default_flow_style=False))
            mine = [e for e in events if e.regarding is not None and e.regarding.uid == dgd.metadata.uid]
            out.write("events:\n" if mine else "events: []\n")
            for event in mine:
                out.write(f"  {event.event_time}  {event.type:<7}  {event.reason}: {event.note}\n")
            state = dgd.status.state if dgd.status else "initializing"
            if state != "successful":
                ready = next(
                    (c for c in (dgd.status.conditions if dgd.status else None) or () if c.type == "Ready"),
                    None,
                )
                why = f"{ready.reason}: {ready.message}" if ready is not None else "no status yet"
                failed.append(f"{where} is {state} after {sim.elapsed():.0f}s: {why}")
        out.flush()
        for line in failed:
            print(line, file=sys.stderr)
        return EXIT_FAILED if failed else EXIT_OK
