"""Page/limit pagination shared by every list endpoint."""

from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel

DEFAULT_LIMIT = 50
MAX_LIMIT = 100
# Keeps (page - 1) * limit inside a 64-bit OFFSET on every engine.
MAX_PAGE = 2**31 - 1

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageParams:
    page: int = 1
    limit: int = DEFAULT_LIMIT

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


# async: FastAPI runs a plain `def` dependency in a thread pool, a costly hop per request.
async def page_params(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, starting at 1.")] = 1,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description=f"Items per page, at most {MAX_LIMIT}.")
    ] = DEFAULT_LIMIT,
) -> PageParams:
    return PageParams(page=page, limit=limit)


class Pagination(BaseModel):
    page: int
    limit: int
    total: int


class Page(BaseModel, Generic[T]):
    data: list[T]
    pagination: Pagination
