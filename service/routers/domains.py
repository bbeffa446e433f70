"""Domain packs: list, read, and add a custom pack as YAML."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, status

from service.deps import RuntimeDep
from service.errors import InvalidRequest, NotFound
from service.schemas import ERROR_RESPONSES, DomainList, DomainSummary

router = APIRouter(prefix="/v1/domains", tags=["domains"], responses=ERROR_RESPONSES)
MAX_PACK_BYTES = 1024 * 1024


def _summary(pack: Any, builtin: bool) -> DomainSummary:
    return DomainSummary(name=pack.name, title=pack.title, task=pack.task, n_contexts=len(pack.context),
                         n_slices=len(pack.slices), builtin=builtin)


@router.get("", response_model=DomainList)
def list_domains(runtime: RuntimeDep) -> DomainList:
    from domains import list_builtin

    builtin = set(list_builtin())
    return DomainList(items=[_summary(runtime.packs.get(n), n in builtin) for n in runtime.packs.names()])


@router.get("/{name}", response_model=dict[str, Any])
def get_domain(name: str, runtime: RuntimeDep) -> dict[str, Any]:
    try:
        return runtime.packs.get(name).to_dict()
    except InvalidRequest as exc:  # a missing resource here, not a bad reference in a body
        raise NotFound(exc.message, code=exc.code, details=exc.details) from None


@router.post("", status_code=status.HTTP_201_CREATED, response_model=dict[str, Any],
             openapi_extra={"requestBody": {"required": True,
                                            "content": {"application/yaml": {"schema": {"type": "string"}},
                                                        "text/plain": {"schema": {"type": "string"}}}}})
async def add_domain(request: Request, runtime: RuntimeDep) -> dict[str, Any]:
    """Add a custom pack, posted as YAML text (``Content-Type: application/yaml``)."""
    raw = await request.body()
    if not raw.strip():
        raise InvalidRequest("Send the domain pack as YAML in the request body.", code="invalid_domain_pack")
    if len(raw) > MAX_PACK_BYTES:
        raise InvalidRequest("A domain pack must be under 1 MB.", code="invalid_domain_pack")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("The domain pack must be UTF-8 text.", code="invalid_domain_pack") from None
    return runtime.packs.add(text).to_dict()
