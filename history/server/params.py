"""Query parameters a route does not declare are refused (422), not silently ignored.

A client that misspells a parameter (``befor_seq=10``) or sends one a route does not take
(``/history?category=trace``) would otherwise get an answer that looks right and is not:
every ``/api`` route depends on :func:`reject_unknown_query`, which compares the request's
query names with the ones the route (and its dependencies) declare.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

__all__ = ["reject_unknown_query"]


def _names(dependant: Dependant) -> frozenset[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _names(sub)
    return frozenset(names)


async def reject_unknown_query(request: Request) -> None:
    """Raise a 422 naming every query parameter the matched route does not declare."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    declared = _names(route.dependant)  # a few names: cheaper to walk than to cache
    unknown = sorted(set(request.query_params.keys()) - declared)
    if unknown:
        allowed = ", ".join(sorted(declared)) or "none"
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", name),
                    "msg": f"unknown query parameter {name!r}; this route takes: {allowed}",
                    "input": request.query_params.get(name),
                }
                for name in unknown
            ]
        )
