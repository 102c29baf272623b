"""Write envdoctor/schemas/*.json from the typed model: `python -m tests.regen_schemas`.

The JSON Schemas (draft 2020-12) of envdoctor.report/1, envdoctor.snapshot/1 and envdoctor.install/1
are made from the same dataclasses that serde reads and writes, so a fact's type cannot drift
between the code and its schema: tests/test_schemas.py fails when the shipped files differ from
what this produces. Objects allow extra properties (versions change additively); required are the
fields without a default, as serde.from_data requires them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from envdoctor.install.commands import CommandKind
from envdoctor.install.plan import Route
from envdoctor.model.findings import Interpreter, PlatformInfo, PluginInfo, ProbeStatus, Severity, Support
from envdoctor.probes import PROBES
from envdoctor.util.serde import INT_MAX, INT_MIN, may_be_negative

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "envdoctor" / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
NULLABLE_STRING = {"type": ["string", "null"]}
CODE = "^[A-Z][A-Z0-9]{1,9}[0-9]{3}$"  # ED101, or a plugin's namespaced code (VLLM001)


class _Defs:
    """Collects one $defs entry per dataclass reached from the roots."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.names: dict[type, str] = {}

    def ref(self, cls: type) -> dict[str, Any]:
        name = self.names.get(cls)
        if name is None:
            name = cls.__name__
            if name in self.defs:  # two dataclasses of one name in different modules
                name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"
            self.names[cls] = name
            self.defs[name] = {}  # reserved first: recursive types refer to it
            self.defs[name] = self._dataclass(cls)
        return {"$ref": f"#/$defs/{name}"}

    def _dataclass(self, cls: type) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            properties[f.name] = self.of(hints[f.name])
            if not may_be_negative(f.name):
                _no_negatives(properties[f.name])
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema

    def of(self, tp: Any) -> dict[str, Any]:
        if tp is Any or tp is object:
            return {}
        origin = typing.get_origin(tp)
        if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
            variants = [self.of(arg) for arg in typing.get_args(tp)]
            return {"anyOf": variants}
        if origin is tuple:
            args = typing.get_args(tp)
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.of(args[0])}
            return {
                "type": "array",
                "prefixItems": [self.of(a) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        if origin in (dict, Mapping, typing.Mapping) or tp is dict:
            args = typing.get_args(tp)
            return {"type": "object", "additionalProperties": self.of(args[1]) if len(args) == 2 else {}}
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self.ref(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return {"enum": [m.value for m in tp]}
        simple = {
            str: STRING,
            bool: {"type": "boolean"},
            float: {"type": "number"},
            int: {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
            type(None): {"type": "null"},
        }
        if tp in simple:
            return dict(simple[tp])
        raise TypeError(f"no JSON Schema for {tp!r}")


def _no_negatives(schema: dict[str, Any]) -> None:
    """A field's own integer (or optional integer) may not be below zero (serde.may_be_negative)."""
    for branch in (schema, *schema.get("anyOf", ())):
        if branch.get("type") == "integer" and branch.get("minimum") == INT_MIN:
            branch["minimum"] = 0


def _envelope(schema_id: str, title: str) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "title": title,
        "type": "object",
        "properties": {"schema": {"const": schema_id}},
    }


def snapshot_schema() -> dict[str, Any]:
    defs = _Defs()
    by_probe = [
        {
            "if": {"properties": {"probe": {"const": spec.name}}},
            "then": {"properties": {"facts": {"anyOf": [{"type": "null"}, defs.of(spec.facts_type)]}}},
        }
        for spec in PROBES
    ]
    probe = {
        "type": "object",
        "properties": {
            "probe": STRING,
            "status": {"enum": [s.value for s in ProbeStatus]},
            "seconds": {"type": "number", "minimum": 0},
            "error": NULLABLE_STRING,
            "facts": {"anyOf": [{"type": "null"}, {"type": "object"}]},
        },
        "required": ["probe", "status"],
        "allOf": [
            *by_probe,
            {  # a probe that answered has its facts
                "if": {"properties": {"status": {"const": ProbeStatus.OK.value}}, "required": ["status"]},
                "then": {"properties": {"facts": {"type": "object"}}, "required": ["facts"]},
            },
        ],
    }
    schema = _envelope("envdoctor.snapshot/1", "envdoctor snapshot: what the probes saw on one machine")
    schema["properties"].update(
        {
            "envdoctor_version": STRING,
            "created": STRING,
            "description": STRING,
            "sources": STRINGS,
            "platform": defs.of(PlatformInfo),
            "interpreter": defs.of(Interpreter),
            "probes": {"type": "array", "items": probe},
        }
    )
    schema["required"] = ["schema", "platform", "interpreter", "probes"]
    schema["$defs"] = defs.defs
    return schema


def report_schema() -> dict[str, Any]:
    defs = _Defs()
    severity = {"enum": [s.value for s in Severity]}
    fix = {
        "type": "object",
        "properties": {"summary": STRING, "commands": STRINGS, "link": NULLABLE_STRING},
        "required": ["summary", "commands", "link"],
    }
    finding = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": CODE},
            "name": STRING,
            "severity": severity,
            "area": STRING,
            "title": STRING,
            "detail": STRING,
            "evidence": STRINGS,
            "fixes": {"type": "array", "items": fix},
            "folded_under": {"type": "string", "pattern": CODE},
            "support": {"enum": [s.value for s in Support]},  # `envdoctor why` only
        },
        "required": ["code", "name", "severity", "area", "title", "detail", "evidence", "fixes"],
    }
    why = {
        "type": "object",
        "properties": {
            "known": {"type": "boolean"},
            "signatures": STRINGS,
            "read_bytes": {"type": "integer", "minimum": 0},
            "truncated": {"type": "boolean"},
            "input": STRING,
        },
        "required": ["known", "signatures", "read_bytes", "truncated", "input"],
    }
    area = {
        "type": "object",
        "properties": {"area": STRING, "title": STRING, "severity": severity, "verdict": STRING},
        "required": ["area", "title", "severity", "verdict"],
    }
    probe = {
        "type": "object",
        "properties": {
            "name": STRING,
            "status": {"enum": [s.value for s in ProbeStatus]},
            "seconds": {"type": "number", "minimum": 0},
            "error": NULLABLE_STRING,
        },
        "required": ["name", "status", "seconds", "error"],
    }
    expectation = {
        "type": "object",
        "properties": {
            "value": {"type": ["string", "integer", "boolean"]},
            "rule": {"type": "string", "pattern": CODE},
            "status": {"enum": ["met", "not met", "ignored"]},
        },
        "required": ["value", "rule", "status"],
    }
    schema = _envelope("envdoctor.report/1", "envdoctor report: findings and the facts behind them")
    schema["properties"].update(
        {
            "envdoctor_version": STRING,
            "source": STRING,
            "interpreter": defs.of(Interpreter),
            "platform": defs.of(PlatformInfo),
            "status": {"enum": ["ok", "warning", "error"]},
            "exit_code": {"enum": [0, 1]},
            "areas": {"type": "array", "items": area},
            "probes": {"type": "array", "items": probe},
            "facts": {
                "type": "object",
                "properties": {spec.name: defs.of(spec.facts_type) for spec in PROBES},
            },
            "findings": {"type": "array", "items": finding},
            "expectations": {"type": "object", "additionalProperties": expectation},
            "ignored": {"type": "array", "items": {"type": "string", "pattern": CODE}},
            "why": why,
            "plugins": {"type": "array", "items": defs.of(PluginInfo)},  # only when plugins are installed
        }
    )
    schema["required"] = [
        "schema", "envdoctor_version", "source", "interpreter", "platform", "status", "exit_code",
        "areas", "probes", "facts", "findings",
    ]  # fmt: skip
    schema["$defs"] = defs.defs
    return schema


def install_schema() -> dict[str, Any]:
    command = {
        "type": "object",
        "properties": {
            "manager": {"enum": ["pip", "uv", "conda"]},
            "command": STRING,
            # absent for a shell command; "pyproject.toml" for a snippet
            "kind": {"enum": [k.value for k in CommandKind if k is not CommandKind.SHELL]},
        },
        "required": ["manager", "command"],
    }
    schema = _envelope("envdoctor.install/1", "envdoctor install: the command that installs a working torch")
    schema["properties"].update(
        {
            "torch": NULLABLE_STRING,
            "torchvision": NULLABLE_STRING,
            "torchaudio": NULLABLE_STRING,
            "variant": NULLABLE_STRING,
            "reason": STRING,
            "commands": {"type": "array", "items": command},
            "warnings": STRINGS,
            "suggestions": STRINGS,
            "source": STRING,  # only when the sources are known: where the build comes from
            "route": {"enum": [r.value for r in Route]},
            "unverified": {"const": True},  # only for a release newer than envdoctor's data
            "left_out": STRINGS,  # companions of the release the commands do not install
            "inputs": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"value": STRING, "origin": STRING},
                    "required": ["value", "origin"],
                },
            },
        }
    )
    schema["required"] = [
        "schema", "torch", "torchvision", "torchaudio", "variant", "reason", "commands", "warnings",
        "suggestions", "inputs",
    ]  # fmt: skip
    return schema


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema, for every JSON format envdoctor writes."""
    return {
        "report-1.json": report_schema(),
        "snapshot-1.json": snapshot_schema(),
        "install-1.json": install_schema(),
    }


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main() -> None:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, schema in schemas().items():
        (SCHEMA_DIR / name).write_text(dumps(schema), encoding="utf-8")
        print(f"wrote envdoctor/schemas/{name}")


if __name__ == "__main__":
    main()
    sys.exit(0)
