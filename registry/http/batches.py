"""Batches: ``POST /api/v1/things/batch`` registers many Thing Descriptions in one request and one transaction.

What ``registry import`` sends: each description is checked, validated and projected exactly as a PUT of it
would be, but the request, the commit and the client's round trip are paid once per batch, not per description.
Against ``REGISTRY_RATE_LIMIT_WRITES`` a batch counts one write per description, all or none: a batch that does not
fit in what the limit leaves is refused whole (429), before anything is written.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.di import NamedDependency

from registry.auth.principal import Scope
from registry.directory.service import DirectoryService, WriteOutcome
from registry.errors import BadRequest, RegistryError
from registry.http.access import WRITES_COUNTED_BY_HANDLER, principal_of, requester
from registry.http.bodies import JSON, JsonLimits, read_json
from registry.http.contract import Answer, Body, documented, ref
from registry.http.dependencies import Access
from registry.ops.metrics import FAILED_VALIDATIONS
from registry.wire import MAX_BATCH, BatchItem, BatchResult, Problem


def _item(result: WriteOutcome | RegistryError, document: Any) -> BatchItem:
    if isinstance(result, WriteOutcome):
        written = HTTPStatus.CREATED if result.created else HTTPStatus.OK
        return BatchItem(int(written), result.stored.id, result.stored.etag, result.notices)
    if "validationErrors" in result.extra:
        FAILED_VALIDATIONS.inc()
    status = int(result.status)
    problem = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": result.detail}
    thing_id = document.get("id") if isinstance(document, dict) else None
    return BatchItem(
        status,
        thing_id if isinstance(thing_id, str) else None,
        problem=msgspec.convert({**result.extra, **problem}, Problem),
    )


@post(
    "/api/v1/things/batch",
    operation_id="registerBatch",
    summary="Create or replace many Thing Descriptions (each with its id) in one request",
    tags=["Things"],
    status_code=200,
    opt={WRITES_COUNTED_BY_HANDLER: True}
    | documented(
        body=Body(
            {JSON: {"type": "array", "maxItems": MAX_BATCH, "items": ref("ThingDescription")}},
            f"Up to {MAX_BATCH} Thing Descriptions, each with its id; each is checked as PUT /things/{{id}} would",
        ),
        answers={
            200: Answer(
                "Each description's outcome in its place: 201 created, 200 replaced, or the problem that refused it",
                {JSON: ref("BatchResult")},
            )
        },
    ),
)
async def register_batch(
    request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService], access: NamedDependency[Access]
) -> Response[BatchResult]:
    documents = await read_json(request, (JSON,), JsonLimits.of(directory.settings))
    if not isinstance(documents, list):
        raise BadRequest("A batch is a JSON array of Thing Descriptions")
    if len(documents) > MAX_BATCH:
        raise BadRequest(f"A batch holds at most {MAX_BATCH} descriptions; this one holds {len(documents)}")
    access.limits.hit(Scope.WRITE, requester(request), max(1, len(documents)))
    outcomes = await directory.put_many(documents, principal=principal_of(request))
    items = [_item(outcome, document) for outcome, document in zip(outcomes, documents, strict=True)]
    written = sum(item.problem is None for item in items)
    return Response(BatchResult(written, len(items) - written, items), status_code=200)


__all__ = ["register_batch"]
