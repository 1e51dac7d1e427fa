"""JSON-LD contexts served from disk, never from the network.

The bundled copies cover what TDs name (TD 1.0 and 1.1, WoT Discovery, the pre-REC draft discovery context and
the old ``http://www.w3.org/ns/td``); operators add more with ``REGISTRY_CONTEXT_DIR`` (an ``index.json`` mapping
context URLs to files in that directory). Anything else is *unknown*: it is never dereferenced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from registry.descriptions.model import DISCOVERY_CONTEXT, TD10_CONTEXT, TD11_CONTEXT

LEGACY_DISCOVERY_CONTEXT = "https://w3c.github.io/wot-discovery/context/discovery-context.jsonld"
#: The pre-REC TD context URL early TDs (and the WoT Discovery examples) still use.
OLD_TD_CONTEXT = "http://www.w3.org/ns/td"

#: URL -> bundled file. The TD 1.0 URL serves the 1.1 context today (byte-identical, see contexts/SOURCES.txt).
BUNDLED = {
    TD10_CONTEXT: "td-context-1.1.jsonld",
    TD11_CONTEXT: "td-context-1.1.jsonld",
    OLD_TD_CONTEXT: "td-context-1.1.jsonld",
    DISCOVERY_CONTEXT: "discovery-context.jsonld",
    "https://www.w3.org/2022/wot/discovery-did": "discovery-did-context.jsonld",
    LEGACY_DISCOVERY_CONTEXT: "legacy-discovery-context-draft.jsonld",
}


class ContextError(ValueError):
    """The operator's context directory is unusable; raised at start-up."""


def _variants(url: str) -> set[str]:
    """The spellings of one context URL that denote the same document (trailing slash, http/https, .jsonld)."""
    bare = url.rstrip("/")
    spellings = {bare, bare + "/"}
    if bare.startswith("https://www.w3.org/"):
        spellings |= {"http://" + s.removeprefix("https://") for s in list(spellings)}
    return spellings


class ContextLibrary:
    """Context documents by URL. ``get`` answers only from memory: an unknown URL is None, never a request."""

    def __init__(self, documents: Mapping[str, dict[str, Any]]) -> None:
        self._documents: dict[str, dict[str, Any]] = {}
        self._urls = sorted(documents)
        for url, document in documents.items():
            for spelling in _variants(url):
                self._documents.setdefault(spelling, document)

    @classmethod
    def load(cls, operator_dir: Path | None = None) -> ContextLibrary:
        package = resources.files("registry.semantic").joinpath("contexts")
        parsed: dict[str, dict[str, Any]] = {}
        documents: dict[str, dict[str, Any]] = {}
        for url, name in BUNDLED.items():
            if name not in parsed:
                parsed[name] = json.loads(package.joinpath(name).read_text(encoding="utf-8"))
            documents[url] = parsed[name]
        if operator_dir is not None:
            documents.update(_operator_contexts(operator_dir))
        return cls(documents)

    def get(self, url: str) -> dict[str, Any] | None:
        return self._documents.get(url) or self._documents.get(url.rstrip("/"))

    def urls(self) -> list[str]:
        """The URLs served (each also with/without a trailing slash, and as http:// for www.w3.org)."""
        return list(self._urls)

    def pyld_loader(self) -> Any:
        """A pyld ``documentLoader`` over the same contexts (tests compare against pyld); unknown URLs fail."""
        from pyld.jsonld import JsonLdError

        def load(url: str, options: Any = None) -> dict[str, Any]:
            document = self.get(url)
            if document is None:
                raise JsonLdError(f"context {url} is not available offline", "jsonld.LoadDocumentError")
            return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url, "document": document}

        return load


def _operator_contexts(directory: Path) -> dict[str, dict[str, Any]]:
    index_file = directory / "index.json"
    try:
        index = json.loads(index_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ContextError(f"REGISTRY_CONTEXT_DIR: cannot read {index_file}: {error}") from error
    if not isinstance(index, dict) or not all(isinstance(v, str) for v in index.values()):
        raise ContextError(f"REGISTRY_CONTEXT_DIR: {index_file} must map context URLs to file names")
    documents: dict[str, dict[str, Any]] = {}
    for url, name in index.items():
        path = (directory / name).resolve()
        if directory.resolve() not in path.parents:
            raise ContextError(f"REGISTRY_CONTEXT_DIR: {name} is outside {directory}")
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ContextError(f"REGISTRY_CONTEXT_DIR: cannot read {path} for {url}: {error}") from error
        if not isinstance(document, dict) or "@context" not in document:
            raise ContextError(f"REGISTRY_CONTEXT_DIR: {path} is not a JSON-LD context document")
        documents[url] = document
    return documents
