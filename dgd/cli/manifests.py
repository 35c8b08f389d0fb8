"""The offline commands over manifest files: ``validate``, ``convert``, ``render``, ``crds``.

Exit codes (:mod:`dgd.cli.exits`): 0 success, 1 an invalid DGD, 2 usage error or a file that cannot
be read (missing, not UTF-8, not YAML). Every problem is printed with its file, document index, field
path and what is allowed; bad input never ends in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from dgd.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, wire
from dgd.cli.inputs import (
    BadFile,
    add_config_flag,
    os_problem,
    read_config,
    read_manifests,
    shown,
    write_output,
)
from dgd.domain.admission.documents import admit_document
from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from dgd.domain.crds import crd_files, render_crds_yaml
from dgd.domain.manifests import dump_manifests
from dgd.domain.preflight import unsupported
from dgd.domain.render.errors import RenderError
from dgd.domain.render.offline import InvalidInput, prepare, render, render_dcd_objects
from dgd.messages.dcd import KIND as DCD_KIND
from dgd.messages.dgd import API_VERSION_V1ALPHA1, KIND

#: The Grove kind whose levels a KV-transfer policy's ``clusterTopologyName`` resolves to.
BINDING_KIND = "ClusterTopologyBinding"

#: ``convert --help``.
CONVERT = (
    "Print FILE with every nvidia.com/v1alpha1 DynamoGraphDeployment converted to nvidia.com/v1beta1 "
    "(v1alpha1-only data kept in the nvidia.com/dgd-spec annotation, as upstream does). Other "
    "documents are printed unchanged. '-' reads standard input."
)
#: ``render --help``.
RENDER = (
    "Print, as multi-document YAML in a stable order, the objects the operator would create for "
    "each DynamoGraphDeployment in FILE ('-' reads standard input): on the Grove pathway the "
    "PodCliqueSet and its Services and Ingress, on the Component pathway the "
    "DynamoComponentDeployments; then, for a DGD with an endpoint picker (type: epp), its ConfigMap "
    "(unless eppConfig.configMapRef is used), its InferencePool and, when the configuration names the "
    "Istio service mesh provider, its DestinationRule. v1alpha1 DGDs are converted first; every "
    "DGD is admitted as a create, with upstream's webhook defaults applied in memory. Owner "
    "references and sync bookkeeping annotations are added when the operator writes, so they are "
    "not shown. Nothing is printed unless every DGD renders. No cluster is read: admission's live "
    "lookups (the ClusterTopologyBinding a topology constraint or KV-transfer policy names, whether "
    "the InferencePool API is served for an EPP component) are skipped. A KV-transfer policy with "
    "clusterTopologyName needs that binding's levels: give the ClusterTopologyBinding with "
    "--cluster-topology FILE, or as a document of FILE (it is not printed). With --dcd, each DGD on the "
    "Component pathway is followed, after its DCDs, by what the DCD controller would create for each DCD "
    "on its first reconcile (checkpoint storage PVC, Deployment or LeaderWorkerSet, Service, model "
    "Service, Ingress, VirtualService; the LeaderWorkerSet gate on unless the configuration turns it "
    "off), and DynamoComponentDeployment documents in FILE are rendered the same way."
)


def add_commands(commands: Any) -> None:
    """Add ``validate``, ``convert``, ``render`` and ``crds`` to the ``dgd-operator`` subcommands."""
    validate = commands.add_parser(
        "validate",
        help="check DGD manifests as the API server and admission webhooks would on create",
        description=(
            "Check every DynamoGraphDeployment in the given YAML or JSON files (multi-document; '-' reads "
            "standard input) as a create: schema, CEL rules and the webhook rules that need no cluster. "
            "v1alpha1 DGDs are converted first and their errors reported at v1alpha1 paths. Documents of "
            "other API groups are skipped; an unknown kind in the nvidia.com group is an error. Rules that "
            "depend on the workload pathway read the nvidia.com/enable-grove annotation (absent: Grove). "
            "A file that cannot be read is reported and the others are still checked. No cluster is read: "
            "the webhook's live lookups (the ClusterTopologyBinding a topology constraint or KV-transfer "
            "policy names, whether the InferencePool API is served for an EPP component) are skipped."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="manifest file, or - for standard input")
    validate.add_argument("-q", "--quiet", action="store_true", help="print only errors and the summary")
    wire(validate, _validate, ok="every DGD is valid", failed="a DGD is invalid")

    convert = _over_a_file(commands, "convert", "convert v1alpha1 DGDs to v1beta1", CONVERT)
    wire(convert, _convert, ok="converted", failed="a DGD cannot be converted")

    render = _over_a_file(
        commands, "render", "print the objects the operator would create for DGD manifests", RENDER
    )
    render.add_argument("--namespace", "-n", metavar="NS", help="namespace the DGDs are created in")
    add_config_flag(render)
    render.add_argument(
        "--pathway",
        choices=("grove", "component"),
        help="workload pathway (default: as the operator chooses: Grove unless nvidia.com/enable-grove is "
        '"false" or the config disables Grove)',
    )
    render.add_argument(
        "--cluster-topology",
        metavar="FILE",
        action="append",
        default=[],
        help="YAML with the Grove ClusterTopologyBinding(s) a kvTransferPolicy.clusterTopologyName names "
        "(repeatable)",
    )
    render.add_argument(
        "--dcd",
        action="store_true",
        help="also print the objects the DCD controller would create for each DCD (and render "
        "DynamoComponentDeployment documents of FILE)",
    )
    wire(render, _render, ok="every DGD rendered", failed="a DGD is invalid or cannot be rendered")

    crds = commands.add_parser(
        "crds",
        help="print the CustomResourceDefinitions this operator owns",
        description=(
            "Print the CRDs this operator owns (DynamoGraphDeployment, DynamoComponentDeployment, "
            "DynamoGraphDeploymentScalingAdapter), generated from its data model, as multi-document YAML, "
            "or write them one file per CRD (<group>_<plural>.yaml) into a directory. Grove's CRDs are "
            "not among them: they come with Grove. Apply them with kubectl apply --server-side."
        ),
    )
    crds.add_argument("--output-dir", metavar="DIR", type=Path, help="write one file per CRD into DIR")
    wire(crds, _crds, ok="printed or written")


def _over_a_file(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A command over one manifest ``FILE``."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=summary, description=description)
    parser.add_argument("file", metavar="FILE", help="manifest file, or - for standard input")
    return parser


def _validate(args: argparse.Namespace) -> int:
    out: TextIO = sys.stdout
    counts: Counter[str] = Counter(valid=0, invalid=0, skipped=0)
    for name in args.files:
        try:
            documents = read_manifests(name)
        except BadFile as exc:
            # Reported like a document's error, and the other files are still checked.
            print(f"{exc.where}: error: {exc.reason}", file=out)
            counts["unreadable"] += 1
            continue
        for index, document in enumerate(documents):
            verdict = admit_document(document)
            counts[verdict.outcome] += 1
            where = f"{shown(name)}#{index} {verdict.label}"
            if verdict.outcome == "skipped":
                if not args.quiet:
                    print(f"{where}: skipped: {verdict.reason}", file=out)
                continue
            for error in verdict.errors:
                print(f"{where}: error: {error}", file=out)
            if not args.quiet:
                for warning in verdict.warnings:
                    print(f"{where}: warning: {warning}", file=out)
                if verdict.outcome == "valid":
                    print(f"{where}: valid", file=out)
    unreadable = f", {counts['unreadable']} unreadable" if counts["unreadable"] else ""
    print(
        f"{counts['valid']} valid, {counts['invalid']} invalid, {counts['skipped']} skipped{unreadable}",
        file=out,
    )
    if counts["unreadable"]:
        return EXIT_USAGE
    if not counts["valid"] and not counts["invalid"]:
        # Nothing was checked: an empty file passing would hide a wrong path or a failed download.
        named = ", ".join(shown(name) for name in args.files)
        print(f"{named}: error: no DGD found: no {KIND} document to check", file=out)
        return EXIT_FAILED
    return EXIT_FAILED if counts["invalid"] else EXIT_OK


def _convert(args: argparse.Namespace) -> int:
    documents = read_manifests(args.file)
    converted: list[Any] = []
    failed = False
    for index, document in enumerate(documents):
        is_alpha = isinstance(document, dict) and document.get("kind") == KIND
        if is_alpha and document.get("apiVersion") == API_VERSION_V1ALPHA1:
            try:
                document = dgd_to_v1beta1(document)
            except ConversionError as exc:
                print(f"{shown(args.file)}#{index}: error: {exc}", file=sys.stderr)
                failed = True
        converted.append(document)
    if failed:
        return EXIT_FAILED
    sys.stdout.write(dump_manifests(converted))
    return EXIT_OK


def _bindings(documents: list[Any]) -> dict[str, Any]:
    """The ClusterTopologyBindings among ``documents``, by name."""
    return {
        str(doc["metadata"]["name"]): doc
        for doc in documents
        if isinstance(doc, dict)
        and doc.get("kind") == BINDING_KIND
        and isinstance(doc.get("metadata"), dict)
        and doc["metadata"].get("name")
    }


def _render(args: argparse.Namespace) -> int:
    config = read_config(args.config)
    documents = read_manifests(args.file)
    bindings = _bindings(documents)
    for path in args.cluster_topology:
        bindings.update(_bindings(read_manifests(path)))
    rendered: list[Any] = []
    failed = False
    for index, document in enumerate(documents):
        is_dgd = isinstance(document, dict) and document.get("kind") == KIND
        if isinstance(document, dict) and document.get("kind") == BINDING_KIND:
            continue
        if args.dcd and isinstance(document, dict) and document.get("kind") == DCD_KIND:
            where = f"{shown(args.file)}#{index} {DCD_KIND}"
            failed |= not _render_dcd(document, where, args, config, rendered)
            continue
        if not is_dgd:
            kind = document.get("kind") if isinstance(document, dict) else None
            print(
                f"{shown(args.file)}#{index}: skipped: {kind or 'document'} is not a {KIND}", file=sys.stderr
            )
            continue
        name = (
            (document.get("metadata") or {}).get("name")
            if isinstance(document.get("metadata"), dict)
            else None
        )
        where = f"{shown(args.file)}#{index} {KIND} {name or '<no name>'}"
        try:
            dgd = prepare(document, namespace=args.namespace, config=config, pathway=args.pathway)
            problems = unsupported(dgd, config)
            if problems:
                raise InvalidInput([str(problem) for problem in problems])
            objects = render(dgd, config=config, bindings=bindings)
            rendered += objects
            if args.dcd:
                for obj in [o for o in objects if o.get("kind") == DCD_KIND]:
                    rendered += render_dcd_objects(obj, config=config, owner=dgd)
        except InvalidInput as exc:
            failed = True
            for error in exc.errors:
                print(f"{where}: error: {error}", file=sys.stderr)
        except RenderError as exc:
            failed = True
            print(f"{where}: error: {exc}", file=sys.stderr)
    if failed:
        return EXIT_FAILED
    sys.stdout.write(dump_manifests(rendered))
    return EXIT_OK


def _render_dcd(document: Any, where: str, args: argparse.Namespace, config: Any, out: list[Any]) -> bool:
    """Render one DCD document's children into ``out``; print why not and answer ``False`` if refused."""
    try:
        out += render_dcd_objects(document, config=config, namespace=args.namespace)
    except InvalidInput as exc:
        for error in exc.errors:
            print(f"{where}: error: {error}", file=sys.stderr)
        return False
    except RenderError as exc:
        print(f"{where}: error: {exc}", file=sys.stderr)
        return False
    return True


def _crds(args: argparse.Namespace) -> int:
    if args.output_dir is None:
        sys.stdout.write(render_crds_yaml())
        return EXIT_OK
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadFile(f"--output-dir {args.output_dir}", f"cannot be made: {os_problem(exc)}") from None
    for name, text in crd_files().items():
        write_output(args.output_dir / name, text.encode("utf-8"), flag="--output-dir")
    return EXIT_OK
