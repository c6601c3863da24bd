#!/usr/bin/env python3
"""Fails when a client's operations or enumerations differ from openapi/openapi.json (issue 39,
items 3 and 4).

Usage: check_openapi.py OPENAPI_JSON CONTRACT_JSON DESCRIBE_JSON...

Each DESCRIBE_JSON is what a client's driver prints for `conformance.sh describe` (README.md
beside this file): {"client", "version", "operations": {operationId: "METHOD /path"},
"enums": {name: [values]}}. Required of every client: every operation of the document except
HEAD operations and the contract's `exemptOperations`, with the document's method and path; and
every enumeration of strings, named as below, except the contract's `exemptEnums`, with exactly
the document's values (in any order; `null` is not a value), where the values of the contract's
`exemptEnumValues` may be declared or not. A client may not declare an
operation or enumeration the document lacks.

`requestMembers` ({schema: [member names]}) is the table a client checks what the caller wrote
against (an unknown member is refused before sending, issue 47 item 4): it must name every
schema an EvaluationRequest reaches (through `$ref`s of properties and array items), each with
exactly the document's members.

Enumeration names: a schema of components/schemas that is itself an enumeration is named by the
schema (`OperationCategory`); an enumeration inside a schema by the schema and the property names
that lead to it, through array items (`Problem.code`, `Caller.roles`,
`RateLimitState.throttled.lastReason`).
Prints one line per difference and "openapi-consistency: N passed, N failed" (one per client).
"""
import json
import sys


def operations(document):
    found = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                found[operation["operationId"]] = (method.upper(), path)
    return found


def enums(document):
    found = {}

    def walk(schema, name):
        if not isinstance(schema, dict):
            return
        values = schema.get("enum")
        if values is not None and any(isinstance(v, str) for v in values):
            found[name] = sorted(v for v in values if v is not None)
        for key, sub in schema.get("properties", {}).items():
            walk(sub, name + "." + key)
        walk(schema.get("items"), name)
        for combinator in ("oneOf", "anyOf", "allOf"):
            for sub in schema.get(combinator, []):
                walk(sub, name)

    for name, schema in document["components"]["schemas"].items():
        walk(schema, name)
    return found


def request_members(document, root="EvaluationRequest"):
    """{schema: sorted member names} of `root` and every schema it reaches."""
    schemas = document["components"]["schemas"]
    found = {}

    def refs(schema):
        if not isinstance(schema, dict):
            return
        if "$ref" in schema:
            yield schema["$ref"].rsplit("/", 1)[-1]
        for sub in [schema.get("items")] + [schema.get(c) for c in ("oneOf", "anyOf", "allOf")]:
            for item in (sub if isinstance(sub, list) else [sub]):
                yield from refs(item)

    def visit(name):
        if name in found or "properties" not in schemas[name]:
            return
        found[name] = sorted(schemas[name]["properties"])
        for prop in schemas[name]["properties"].values():
            for ref in refs(prop):
                visit(ref)

    visit(root)
    return found


def check(client, required_operations, required_enums, all_operations, all_enums, members=None, document_schemas=None,
          exempt_values=None):
    problems = []
    document_schemas = document_schemas or {}
    declared_members = client.get("requestMembers", {})
    for name, names in sorted((members or {}).items()):
        if name not in declared_members:
            problems.append("lacks requestMembers %s %s" % (name, names))
        elif sorted(declared_members[name]) != names:
            problems.append("requestMembers %s is %s; openapi/ says %s" % (name, sorted(declared_members[name]), names))
    for name, names in sorted(declared_members.items()):
        if name in (members or {}):
            continue
        schema = document_schemas.get(name, {})
        if "properties" not in schema:
            problems.append("declares requestMembers %s, which openapi/ does not have" % name)
        elif sorted(names) != sorted(schema["properties"]):
            problems.append("requestMembers %s is %s; openapi/ says %s" % (name, sorted(names), sorted(schema["properties"])))
    declared = client.get("operations", {})
    for op_id, (method, path) in sorted(required_operations.items()):
        if op_id not in declared:
            problems.append("lacks operation %s (%s %s)" % (op_id, method, path))
    for op_id, route in sorted(declared.items()):
        if op_id not in all_operations:
            problems.append("declares operation %s, which openapi/ does not have" % op_id)
        elif route != "%s %s" % all_operations[op_id]:
            problems.append("declares %s as %r; openapi/ says %r" % (op_id, route, "%s %s" % all_operations[op_id]))
    declared_enums = client.get("enums", {})
    for name, values in sorted(required_enums.items()):
        if name not in declared_enums:
            problems.append("lacks enumeration %s %s" % (name, values))
    for name, values in sorted(declared_enums.items()):
        if name not in all_enums:
            problems.append("declares enumeration %s, which openapi/ does not have" % name)
            continue
        mine = sorted(set(values))
        # Values the contract exempts (`exemptEnumValues`) may be declared or not.
        optional = set((exempt_values or {}).get(name, {}))
        missing = sorted(set(all_enums[name]) - set(values) - optional)
        extra = sorted(set(values) - set(all_enums[name]))
        if missing or extra or len(mine) != len(values):
            problems.append("enumeration %s differs: missing %s, extra %s%s" % (
                name, missing, extra, ", repeated values" if len(mine) != len(values) else ""))
    return problems


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        document = json.load(f)
    with open(sys.argv[2]) as f:
        contract = json.load(f)
    all_operations = operations(document)
    all_enums = enums(document)
    exempt_values = contract.get("exemptEnumValues", {})
    for name in list(contract["exemptOperations"]) + list(contract["exemptEnums"]) + list(exempt_values):
        if name not in all_operations and name not in all_enums:
            sys.exit("check_openapi: the contract exempts %s, which openapi/ does not have" % name)
    for name, values in exempt_values.items():
        for value in values:
            if value not in all_enums[name]:
                sys.exit("check_openapi: the contract exempts %s of %s, which openapi/ does not have" % (value, name))
    required_operations = {k: v for k, v in all_operations.items()
                           if v[0] != "HEAD" and k not in contract["exemptOperations"]}
    required_enums = {k: v for k, v in all_enums.items() if k not in contract["exemptEnums"]}
    passed = failed = 0
    for path in sys.argv[3:]:
        with open(path) as f:
            client = json.load(f)
        name = "%s %s" % (client.get("client", path), client.get("version", "?"))
        problems = check(client, required_operations, required_enums, all_operations, all_enums,
                         request_members(document), document["components"]["schemas"], exempt_values)
        for problem in problems:
            print("openapi-consistency: FAIL %s %s" % (name, problem))
        if problems:
            failed += 1
        else:
            passed += 1
            print("openapi-consistency: ok   %s: %d operations, %d enumerations, %d request schemas" % (
                name, len(client["operations"]), len(client["enums"]), len(client["requestMembers"])))
    print("openapi-consistency: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
