"""The base of every generated model, and how answers become models.

Answers are validated against the SDK's models. By default an answer that does not fit (a newer service sending a
value this version does not know) is not an error: what fits is typed and the rest is kept as it came, so an old
SDK keeps working against a newer service. With `strict_responses` (or `OFFERKIT_STRICT_RESPONSES=1`) a mismatch
raises pydantic's `ValidationError` instead: the SDK's own tests run that way.
"""

from __future__ import annotations

import os
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError


class OfferkitModel(BaseModel):
    """A record of the API. Fields keep the API's names; unknown fields are kept (`model_extra`)."""

    # defer_build: a model builds its validator when first used, not at import (two hundred models).
    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=(), defer_build=True)

    def to_dict(self) -> dict[str, Any]:
        """The record as the API sent it: its JSON field names, only the fields it had, nested records included."""
        return self.model_dump(by_alias=True, mode="json", exclude_unset=True)


def strict_default() -> bool:
    """Whether answers are validated strictly when a client does not say: `OFFERKIT_STRICT_RESPONSES=1`."""
    return os.environ.get("OFFERKIT_STRICT_RESPONSES", "").lower() in ("1", "true", "yes")


_adapters: dict[Any, TypeAdapter[Any]] = {}


def _adapter(tp: Any) -> TypeAdapter[Any]:
    adapter = _adapters.get(tp)
    if adapter is None:
        adapter = _adapters[tp] = TypeAdapter(tp)
    return adapter


def parse(tp: Any, data: object, *, strict: bool) -> object:
    """`data` (parsed JSON) as the type `tp`: a model, a list or dict of them, a union."""
    try:
        return _adapter(tp).validate_python(data)
    except ValidationError:
        if strict:
            raise
        return _lenient(tp, data)


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _lenient(tp: Any, data: object) -> object:
    """What fits of `data` as `tp`, typed; what does not, as it came."""
    try:
        return _adapter(tp).validate_python(data)
    except ValidationError:
        pass
    origin, args = get_origin(tp), get_args(tp)
    if _is_model(tp) and isinstance(data, dict):
        fields = tp.model_fields
        values: dict[str, Any] = {}
        keys: set[str] = set()
        for name, field in fields.items():
            key = field.alias or name
            keys.add(key)
            if key in data:
                values[name] = _lenient(field.annotation, data[key])
        extra = {k: v for k, v in data.items() if k not in keys and k not in fields}
        return tp.model_construct(_fields_set=set(values), **values, **extra)
    if origin is list and isinstance(data, list) and args:
        return [_lenient(args[0], item) for item in data]
    if origin is dict and isinstance(data, dict) and len(args) == 2:
        return {k: _lenient(args[1], v) for k, v in data.items()}
    if origin in (Union, types.UnionType):
        for member in args:
            if _is_model(member) and isinstance(data, dict):
                return _lenient(member, data)
    return data
