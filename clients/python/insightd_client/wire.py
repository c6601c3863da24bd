"""Between dataclasses with snake_case fields and the API's camelCase JSON.

`encode` leaves out fields that are None (the API reads `null` as a type error, not as
"absent") and writes enumerations as their strings. `decode` builds a dataclass from a JSON
object by its type hints: nested dataclasses, lists, dicts, Optional, and open enumerations (a
string the enumeration lacks stays a string). In an answer (`decode`), members the dataclass does
not declare are ignored, so a field added by a later insightd does not break this client. In
what the caller wrote (`decode_request`), such a member is a mistake (a misspelt name, the kit's
object wrapped once too often) that would otherwise vanish from the request unseen: it raises
UnknownMemberError naming its path, before anything is sent.
"""
import dataclasses
import enum
import typing

from .errors import UnknownMemberError


def camel(name):
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def encode(value):
    if dataclasses.is_dataclass(value):
        return {camel(f.name): encode(getattr(value, f.name))
                for f in dataclasses.fields(value) if getattr(value, f.name) is not None}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    return value


_hints = {}


def decode(cls, data):
    """`data` (parsed JSON, an answer) as `cls`; raises ValueError when it does not have the shape."""
    return _decode(cls, data, None)


def decode_request(cls, data, path=""):
    """`data` (a request the caller wrote as dicts and lists) as `cls`, refusing a member `cls`
    does not declare with UnknownMemberError; `path` names where `data` sits in the body."""
    return _decode(cls, data, path)


def _at(path, member):
    if path is None:
        return None
    return "%s.%s" % (path, member) if path else member


def _decode(cls, data, path):
    """`path` is None for an answer (unknown members ignored), else where `data` is."""
    origin = typing.get_origin(cls)
    if origin is typing.Union:
        options = [arg for arg in typing.get_args(cls) if arg is not type(None)]
        if data is None:
            return None
        # Union[SomeEnum, str]: the enumeration's member when it has one, else the string.
        return _decode(options[0], data, path)
    if origin is list:
        if not isinstance(data, list):
            raise ValueError("expected an array, got %s" % type(data).__name__)
        (item,) = typing.get_args(cls)
        return [_decode(item, entry, None if path is None else "%s[%d]" % (path, index))
                for index, entry in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError("expected an object, got %s" % type(data).__name__)
        _, item = typing.get_args(cls)
        return {key: _decode(item, entry, _at(path, key)) for key, entry in data.items()}
    if cls is typing.Any:
        return data
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        if not isinstance(data, str):
            raise ValueError("expected a string, got %s" % type(data).__name__)
        try:
            return cls(data)
        except ValueError:
            return data
    if dataclasses.is_dataclass(cls):
        if not isinstance(data, dict):
            raise ValueError("expected an object for %s, got %s" % (cls.__name__, type(data).__name__))
        hints = _hints.get(cls)
        if hints is None:
            hints = _hints[cls] = typing.get_type_hints(cls)
        arguments = {}
        if path is not None:
            declared = [camel(f.name) for f in dataclasses.fields(cls) if f.init]
            for key in data:
                if key not in declared:
                    raise UnknownMemberError(_at(path, key), cls.__name__, declared)
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            key = camel(f.name)
            if key in data:
                arguments[f.name] = _decode(hints[f.name], data[key], _at(path, key))
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError("%s lacks %s" % (cls.__name__, key))
        return cls(**arguments)
    if cls is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if cls in (str, int, float, bool) and (not isinstance(data, cls) or (cls is int and isinstance(data, bool))):
        raise ValueError("expected %s, got %s" % (cls.__name__, type(data).__name__))
    return data
