"""Whole numbers mean whole numbers, yes/no means yes/no: the rule every settings file shares.

pydantic's lax mode reads ``true`` as 1 for an ``int`` field and ``"yes"`` as True for a
``bool`` one: in a scenario, rollout or sweep file both are a person's mistake, read
silently as something else. Each file's tables derive from ``Table``, which refuses
either before the field's own validation (one rule, written once).
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ValidationInfo, field_validator

from platform_testbed.sim.config.settings import MAX_SEED, SEED_RULE

__all__ = ["Seed", "Table", "confusion"]


def _seed(value: int) -> int:
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"must be {SEED_RULE}")
    return value


#: A settings file's seed: the API's and the command line's rule (sim.config.settings.seed_value),
#: so a file cannot hold a seed that ``--seed`` or ``seeds=`` would refuse.
Seed = Annotated[int, AfterValidator(_seed)]


def _kinds(annotation: Any) -> set[Any]:
    """The types a field's annotation admits, unions and ``Optional`` flattened."""
    if get_origin(annotation) is Annotated:  # ``Seed | None``: the int inside the Seed
        return _kinds(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return set().union(*(_kinds(arg) for arg in get_args(annotation)))
    return {annotation}


def confusion(annotation: Any, value: object) -> str | None:
    """Why ``value`` is the wrong kind for ``annotation`` (a bool for a number, a non-bool
    for a bool, either inside a list), or None."""
    kinds = _kinds(annotation)
    if isinstance(value, bool):
        if bool not in kinds and float in kinds:
            return "must be a number, not true or false"
        if bool not in kinds and int in kinds:
            return "must be a whole number (an integer), not true or false"
        return None
    if kinds <= {bool, type(None)} and bool in kinds and value is not None:
        return "must be true or false"
    if isinstance(value, list):
        for kind in kinds:
            if get_origin(kind) is list and (inner := get_args(kind)):
                problems = (confusion(inner[0], item) for item in value)
                if found := next((p for p in problems if p), None):
                    return f"each must be {found.removeprefix('must be ')}"
    return None


class Table(BaseModel):
    """A settings table: a bool where a number is meant (and the reverse) is refused."""

    @field_validator("*", mode="before")
    @classmethod
    def _whole_kinds(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields.get(info.field_name or "")
        problem = None if field is None else confusion(field.annotation, value)
        if problem:
            raise ValueError(problem)
        return value
