"""The kube adapter loads kubernetes-asyncio's client without its generated API and model classes."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import dgd.cluster.kube.adapter, dgd.cluster.kube.config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio import config
loaded = sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client."))
print(len([m for m in loaded if ".models." in m or ".api." in m]), ApiClient.__name__, Configuration.__name__)
print(callable(config.load_kube_config))
"""


def _run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split("\n")


def test_the_adapter_imports_no_generated_api_or_model_class() -> None:
    # when a fresh process imports the kube adapter and its config loader
    counted, loader = _run(PROBE)[:2]

    # then not one generated API or model module was imported, and the client's two classes and the
    # config loader are there for the adapter
    assert counted == "0 ApiClient Configuration"
    assert loader == "True"


def test_a_process_that_imported_the_full_client_first_keeps_it() -> None:
    # given a process that imported kubernetes-asyncio whole before the adapter
    code = "import kubernetes_asyncio.client\n" + PROBE

    # then the adapter takes the full client as it is (its generated classes stay loaded)
    counted, loader = _run(code)[:2]
    assert int(counted.split()[0]) > 100
    assert loader == "True"
