from fastapi import APIRouter

from service.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Liveness probe; never needs an API key."""
    return Health(status="ok")
