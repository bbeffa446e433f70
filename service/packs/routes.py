"""Domain packs: list, read, add a custom pack as YAML, store a new version, retire it."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response, status

from domains import aliases_of, is_builtin, list_builtin
from service.deps import RuntimeDep
from service.errors import InvalidRequest, NotFound, UploadTooLarge
from service.packs.limits import PackLimits
from service.packs.schemas import DomainList, DomainSummary
from service.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/domains", tags=["domains"], responses=ERROR_RESPONSES)
YAML_BODY = {"requestBody": {"required": True,
                             "content": {"application/yaml": {"schema": {"type": "string"}},
                                         "text/plain": {"schema": {"type": "string"}}}}}


def _summary(pack: Any, builtin: bool) -> DomainSummary:
    return DomainSummary(name=pack.name, title=pack.title, task=pack.task, n_contexts=len(pack.context),
                         n_slices=len(pack.slices), builtin=builtin, aliases=list(aliases_of(pack.name)))


@router.get("", response_model=DomainList)
def list_domains(runtime: RuntimeDep) -> DomainList:
    builtin = set(list_builtin())
    return DomainList(items=[_summary(runtime.packs.get(n), n in builtin) for n in runtime.packs.names()])


@router.get("/{name}", response_model=dict[str, Any])
def get_domain(name: str, runtime: RuntimeDep) -> dict[str, Any]:
    try:
        pack = runtime.packs.get(name)
        version = None if is_builtin(name) else runtime.packs.get_text(name)[1]
    except InvalidRequest as exc:  # a missing resource here, not a bad reference in a body
        raise NotFound(exc.message, code=exc.code, details=exc.details) from None
    return {**pack.to_dict(), "version": version, "aliases": list(aliases_of(pack.name))}


async def _read_pack(request: Request, max_bytes: int) -> str:
    """The YAML body, read in chunks and refused as soon as it passes ``max_bytes``."""
    declared = request.headers.get("content-length", "")
    too_large = UploadTooLarge(f"A domain pack must be under {max_bytes / 1024:g} KB (CONTEXTSHIFT_MAX_PACK_KB).",
                               code="pack_too_large", details={"max_bytes": max_bytes,
                                                               "limit": "CONTEXTSHIFT_MAX_PACK_KB"})
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise too_large
    if not body.strip():
        raise InvalidRequest("Send the domain pack as YAML in the request body.", code="invalid_domain_pack")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("The domain pack must be UTF-8 text.", code="invalid_domain_pack") from None


def _max_bytes(runtime) -> int:
    return int(runtime.settings.max_pack_kb * 1024)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=dict[str, Any], openapi_extra=YAML_BODY)
async def add_domain(request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    """Add a custom pack, posted as YAML text (``Content-Type: application/yaml``)."""
    text = await _read_pack(request, _max_bytes(runtime))
    pack = runtime.packs.add(text, limits=PackLimits.from_settings(runtime.settings))
    return {**pack.to_dict(), "version": runtime.packs.get_text(pack.name)[1]}


@router.put("/{name}", response_model=dict[str, Any], openapi_extra=YAML_BODY)
async def update_domain(name: str, request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    """Store a new version of the custom pack ``name``; audits keep the version they started with."""
    text = await _read_pack(request, _max_bytes(runtime))
    pack, version = runtime.packs.update(name, text, limits=PackLimits.from_settings(runtime.settings))
    return {**pack.to_dict(), "version": version}


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_domain(name: str, runtime: RuntimeDep) -> Response:
    """Retire a custom pack; built-in packs cannot be retired (409)."""
    runtime.packs.retire(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
