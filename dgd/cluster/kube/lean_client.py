"""kubernetes-asyncio's client without its generated API and model classes.

The adapter uses three pieces of ``kubernetes_asyncio.client``: ``ApiClient`` (the HTTP call with the
cluster's URL, TLS and credentials), ``Configuration`` and, through the config loader, the same two.
It never builds a generated model (responses are decoded straight into msgspec Structs), yet importing
the package runs its ``__init__``, which imports every API and model class it has: about 37 MiB of
resident memory in a process that uses none of them (issue 18).

``install()`` puts bare ``kubernetes_asyncio`` and ``kubernetes_asyncio.client`` packages in
``sys.modules`` (the real directories as their paths, so submodules such as ``config`` import as
usual; the top package's ``__init__`` would import the whole client) with an empty ``models``
submodule, then
imports ``api_client`` and ``configuration`` and exposes their two classes where callers look for
them. It must run before anything imports the real package (``dgd.cluster.kube`` calls it first);
if something already did, it changes nothing. What it leaves out: ``ApiClient.deserialize`` into
generated models, and ``kubernetes_asyncio.client.CoreV1Api`` and its kind — never used here.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

TOP, PACKAGE = "kubernetes_asyncio", "kubernetes_asyncio.client"


def _bare(name: str, path: list[str], doc: str) -> types.ModuleType:
    module = types.ModuleType(name, doc)
    module.__path__ = path
    module.__package__ = name
    sys.modules[name] = module
    return module


def install() -> bool:
    """Make ``kubernetes_asyncio.client`` the lean package; ``False`` if the full one is loaded already."""
    if TOP in sys.modules:
        return False
    # The top package's __init__ imports the whole client too: it is bare as well (its subpackages
    # config, watch... import from its directory as usual). A top-level find_spec runs no code.
    spec = importlib.util.find_spec(TOP)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{TOP} is not installed")
    locations = list(spec.submodule_search_locations)
    top = _bare(TOP, locations, "kubernetes-asyncio, its package-level imports left out")
    package = _bare(PACKAGE, [os.path.join(p, "client") for p in locations], "its generated classes left out")
    models = types.ModuleType(f"{PACKAGE}.models", "left out: the adapter builds no generated model")
    sys.modules[models.__name__] = models
    top.client = package  # type: ignore[attr-defined]
    package.models = models  # type: ignore[attr-defined]
    try:
        configuration = importlib.import_module(f"{PACKAGE}.configuration")
        api_client = importlib.import_module(f"{PACKAGE}.api_client")
    except BaseException:
        for name in (TOP, PACKAGE, models.__name__):
            sys.modules.pop(name, None)
        raise
    package.Configuration = configuration.Configuration  # type: ignore[attr-defined]
    package.ApiClient = api_client.ApiClient  # type: ignore[attr-defined]
    return True
