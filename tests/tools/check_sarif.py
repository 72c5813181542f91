#!/usr/bin/env python3
"""Checks a SARIF 2.1.0 log that flashproof wrote (`flashproof verify --format sarif`).

Exit 0 when the log is right; exit 1 with one line per problem on stderr, each naming the JSON
path of the offending item (`FILE: $.runs[0].results[2].level: ...`); exit 2 on a usage error.

What "right" means:
  1. valid against the official SARIF 2.1.0 JSON schema (the copy next to this script, validated
     with the draft it declares; no $ref is ever fetched from the network);
  2. the rules the schema cannot express:
     - SARIF 3.27.9/3.27.10: a result whose kind is present and is not "fail" has level "none" (or
       none at all); a result of kind "fail" (or of no kind) has a level other than "none";
     - every result's ruleId is declared in its run's tool.driver.rules (ids unique there), and its
       ruleIndex, when present, points at the rule with that id;
     - every rule has a non-empty shortDescription.text and help.text, and its helpUri, when
       present, is an absolute http(s) URI whose host is not a placeholder (flashproof.dev,
       example.com/.org/.net, localhost, the reserved TLDs .example .test .invalid .localhost);
       tool.driver.informationUri (and every tool component's), when present, likewise;
     - every artifactLocation.uri (results, artifacts, invocations, ... wherever the schema puts an
       artifactLocation) is a valid URI reference; a relative reference has a uriBaseId, declared in
       the run's originalUriBaseIds and resolving (SARIF 3.14.14) to an absolute file:// URI that
       ends with "/"; an absolute URI has a scheme (file:// for files) and no uriBaseId (3.4.4);
  3. what the options ask for (see --help).

Import it to check a log already in memory: `problems(log, expect_results=3, ...)` returns the
problems as strings ("$.path: message"); `main(argv)` is the command line.

The schema, tests/tools/sarif-schema-2.1.0.json, is byte for byte the file
  repository  github.com/oasis-tcs/sarif-spec
  path        sarif-2.1/schema/sarif-schema-2.1.0.json
  commit      e0583813964ec43cea53b6b531b402866095ed1f (HEAD of main, 2026-03-01; the file last
              changed in a560296ca8c921f3bdb8d4a8db57ab83dae968a7, 2024-05-02)
  git blob    0f58372b548f60c84d20fca77687435e71b3b3a3
  sha256      c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
It is the SARIF 2.1.0 Errata 01 OASIS Standard schema (its "id" is
https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json) and it
declares JSON Schema draft-04. (The same repository's sarif-2.1/prose/sarif-schema-2.1.0.json is
the older committee-specification copy, which declares draft-07; it lacks the errata.)

Needs python3's jsonschema (Debian: python3-jsonschema, which scripts/setup installs); works with
Debian bookworm's 4.10 (RefResolver) and with 4.18+ (referencing registry).
"""

import argparse
import json
import os
import re
import sys
import urllib.parse

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sarif-schema-2.1.0.json")

LEVELS = ("none", "note", "warning", "error")

# Hosts that are placeholders, not somewhere a reader can go: the project has no flashproof.dev
# site, and RFC 2606 / RFC 6761 reserve the rest.
PLACEHOLDER_HOSTS = ("flashproof.dev", "example.com", "example.org", "example.net", "localhost")
PLACEHOLDER_TLDS = ("example", "test", "invalid", "localhost")

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# RFC 3986 URI-reference characters: unreserved, reserved, and "%" (checked for two hex digits).
_URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------------------------
# JSON paths


def _join(path, key):
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _path_of(parts):
    path = "$"
    for key in parts:
        path = _join(path, key)
    return path


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# 1. The schema


def load_schema(path=SCHEMA_PATH):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _refuse_remote(uri):
    raise LookupError(f"refusing to fetch {uri}: the checker never uses the network")


def _validator(schema):
    """A validator of the draft the schema declares, a format checker of that draft (it checks the
    formats whose optional libraries are installed, and skips the rest), and no remote $ref."""
    import jsonschema
    from jsonschema import validators

    cls = validators.validator_for(schema)
    format_checker = getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker()
    try:
        import referencing  # jsonschema >= 4.18

        registry = referencing.Registry(retrieve=_refuse_remote)
        return cls(schema, registry=registry, format_checker=format_checker)
    except ImportError:
        pass

    class OfflineResolver(validators.RefResolver):  # jsonschema < 4.18 (Debian bookworm: 4.10)
        def resolve_remote(self, uri):
            raise validators.RefResolutionError(
                f"refusing to fetch {uri}: the checker never uses the network")

    resolver = OfflineResolver.from_schema(schema, id_of=cls.ID_OF)
    return cls(schema, resolver=resolver, format_checker=format_checker)


def _describe(error):
    """The most specific error under an anyOf/oneOf, else the error itself."""
    from jsonschema.exceptions import best_match

    if error.context:
        deepest = best_match(error.context)
        if deepest is not None:
            return deepest
    return error


def schema_problems(log, schema=None):
    schema = load_schema() if schema is None else schema
    try:
        validator = _validator(schema)
        errors = list(validator.iter_errors(log))
    except Exception as e:  # an unresolvable $ref, a refused fetch, a broken schema
        return [f"$: schema validation could not run: {_one_line(e)}"]
    out = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        shown = _describe(error)
        path = _path_of(shown.absolute_path)
        out.append(f"{path}: schema: {_one_line(shown.message)}")
    return out


# ---------------------------------------------------------------------------------------------
# Where the schema puts its objects: a walk of the log alongside the schema, collecting every
# object a $ref to #/definitions/NAME describes (artifactLocation, reportingDescriptor, ...).


def _collect(schema, node, value, parts, found, seen):
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        name = ref[len("#/definitions/"):]
        key = (name, tuple(parts))
        if key in seen:
            return
        seen.add(key)
        found.setdefault(name, []).append((value, list(parts)))
        _collect(schema, schema["definitions"].get(name), value, parts, found, seen)
        return
    for combinator in ("allOf", "anyOf", "oneOf"):
        for branch in node.get(combinator, []):
            _collect(schema, branch, value, parts, found, seen)
    if isinstance(value, dict):
        properties = node.get("properties", {})
        for key, item in value.items():
            if key in properties:
                _collect(schema, properties[key], item, parts + [key], found, seen)
            elif isinstance(node.get("additionalProperties"), dict):
                _collect(schema, node["additionalProperties"], item, parts + [key], found, seen)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            _collect(schema, node["items"], item, parts + [i], found, seen)


def objects_by_definition(log, schema):
    found = {}
    _collect(schema, schema, log, [], found, set())
    return found


# ---------------------------------------------------------------------------------------------
# 2. The rules the schema cannot express


def _get(obj, *keys):
    for key in keys:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
            obj = obj[key]
        else:
            return None
    return obj


def _dicts(value):
    """(index, item) for the dict items of a list; nothing for anything else."""
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def _non_empty_text(obj):
    text = _get(obj, "text")
    return isinstance(text, str) and text.strip() != ""


def web_uri_problem(uri):
    """Why `uri` is not an absolute http(s) URI of a real host, or None."""
    if not isinstance(uri, str):
        return "is not a string"
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return f"{uri!r} is not an absolute http(s) URI"
    host = (parsed.hostname or "").rstrip(".").lower()
    if not host:
        return f"{uri!r} has no host"
    if host.split(".")[-1] in PLACEHOLDER_TLDS or any(
            host == h or host.endswith("." + h) for h in PLACEHOLDER_HOSTS):
        return f"{uri!r}: host {host!r} is a placeholder, not a real site"
    return None


def result_level_problems(run, path, no_alerts_for_pass):
    out = []
    for i, result in _dicts(run.get("results")):
        rpath = _join(_join(path, "results"), i)
        kind, level = result.get("kind"), result.get("level")
        if kind is not None and kind != "fail":
            if level is not None and level != "none":
                out.append(f"{rpath}.level: is {level!r} but kind is {kind!r}: a result whose kind "
                           f"is not \"fail\" has level \"none\" (SARIF 3.27.10)")
            elif level is None and kind == "pass" and no_alerts_for_pass:
                out.append(f"{rpath}: kind \"pass\" without level \"none\": a consumer that ignores "
                           f"kind shows it as a warning (--no-alerts-for-pass)")
        elif level == "none":
            shown = 'absent ("fail")' if kind is None else repr(kind)
            out.append(f"{rpath}.level: is \"none\" but kind is {shown}: a failing result has "
                       f"level note, warning or error (SARIF 3.27.10)")
    return out


def effective_level(result, rule):
    """The level SARIF 3.27.10 gives the result (configuration overrides are not looked at)."""
    if result.get("level") is not None:
        return result["level"]
    if result.get("kind", "fail") != "fail":
        return "none"
    return _get(rule, "defaultConfiguration", "level") or "warning"


def rule_problems(run, path):
    out = []
    driver = _get(run, "tool", "driver")
    driver_path = f"{path}.tool.driver"
    rules = _get(driver, "rules")
    rules = rules if isinstance(rules, list) else []
    first_index = {}
    for i, rule in _dicts(rules):
        rpath = _join(f"{driver_path}.rules", i)
        rule_id = rule.get("id")
        if isinstance(rule_id, str):
            if rule_id in first_index:
                out.append(f"{rpath}.id: {rule_id!r} is also the id of rules[{first_index[rule_id]}]")
            else:
                first_index[rule_id] = i
        if not _non_empty_text(rule.get("shortDescription")):
            out.append(f"{rpath}.shortDescription.text: missing or empty")
        if not _non_empty_text(rule.get("help")):
            out.append(f"{rpath}.help.text: missing or empty")
        if "helpUri" in rule:
            why = web_uri_problem(rule["helpUri"])
            if why:
                out.append(f"{rpath}.helpUri: {why}")

    for i, result in _dicts(run.get("results")):
        rpath = _join(f"{path}.results", i)
        rule_ref = result.get("rule") if isinstance(result.get("rule"), dict) else {}
        if "toolComponent" in rule_ref:
            out.append(f"{rpath}.rule.toolComponent: results name rules of tool.driver only")
            continue
        rule_id = result.get("ruleId", rule_ref.get("id"))
        if "ruleId" in result and "id" in rule_ref and result["ruleId"] != rule_ref["id"]:
            out.append(f"{rpath}.rule.id: {rule_ref['id']!r} differs from ruleId "
                       f"{result['ruleId']!r} (SARIF 3.27.7)")
        if not isinstance(rule_id, str):
            out.append(f"{rpath}: no ruleId")
            continue
        if rule_id not in first_index:
            out.append(f"{rpath}.ruleId: {rule_id!r} is not declared in {driver_path}.rules")
        for where, index in ((f"{rpath}.ruleIndex", result.get("ruleIndex")),
                             (f"{rpath}.rule.index", rule_ref.get("index"))):
            if index is None or index == -1:
                continue
            rule = _get(rules, index) if isinstance(index, int) else None
            if not isinstance(rule, dict):
                out.append(f"{where}: {index!r} is not an index into {driver_path}.rules "
                           f"({len(rules)} rules)")
            elif rule.get("id") != rule_id:
                out.append(f"{where}: {index} points at the rule {rule.get('id')!r}, not at "
                           f"{rule_id!r}")
    return out


def tool_component_problems(components):
    out = []
    for component, parts in components:
        if isinstance(component, dict) and "informationUri" in component:
            why = web_uri_problem(component["informationUri"])
            if why:
                out.append(f"{_path_of(parts)}.informationUri: {why}")
    return out


def _run_index(parts):
    return parts[1] if len(parts) >= 2 and parts[0] == "runs" and isinstance(parts[1], int) else None


def _resolve_base(bases, base_id, bpath):
    """The problem in resolving uriBaseId `base_id` through originalUriBaseIds (SARIF 3.14.14) to
    an absolute file:// URI ending with "/", or None."""
    chain = []
    while True:
        if base_id in chain:
            return f"uriBaseId {chain[0]!r} loops through originalUriBaseIds ({' -> '.join(chain + [base_id])})"
        chain.append(base_id)
        base = bases.get(base_id) if isinstance(bases, dict) else None
        if not isinstance(base, dict):
            return f"uriBaseId {base_id!r} is not declared in {bpath}"
        where = _join(bpath, base_id)
        uri = base.get("uri")
        if not isinstance(uri, str):
            return f"uriBaseId {base_id!r}: {where} has no uri"
        if not uri.endswith("/"):
            return f"uriBaseId {base_id!r}: {where}.uri {uri!r} does not end with \"/\""
        if "?" in uri or "#" in uri or ".." in uri.split("/"):
            return f"uriBaseId {base_id!r}: {where}.uri {uri!r} has a query, fragment or \"..\""
        scheme = _SCHEME.match(uri)
        if scheme:
            if not uri.startswith("file://"):
                return (f"uriBaseId {base_id!r}: {where}.uri {uri!r} is not a file:// URI")
            return None
        if "uriBaseId" not in base:
            return (f"uriBaseId {base_id!r}: {where}.uri {uri!r} is relative and has no uriBaseId "
                    f"(it does not resolve to an absolute file:// URI)")
        base_id = base["uriBaseId"]


def uri_reference_problem(uri):
    if not _URI_CHARS.match(uri):
        bad = sorted({c for c in uri if not _URI_CHARS.match(c)})
        return f"{uri!r} is not a URI reference (characters {''.join(bad)!r} must be %-encoded)"
    if _BAD_PERCENT.search(uri):
        return f"{uri!r} is not a URI reference (a \"%\" not followed by two hex digits)"
    return None


def artifact_location_problems(log, locations):
    out = []
    runs = log.get("runs") if isinstance(log.get("runs"), list) else []
    for location, parts in locations:
        if not isinstance(location, dict):
            continue
        path = _path_of(parts)
        r = _run_index(parts)
        if r is not None and len(parts) >= 4 and parts[2] == "originalUriBaseIds":
            continue  # a URI base itself: checked when a location resolves through it
        # A nested artifact (one with a parentIndex) is relative to its parent (SARIF 3.4.4).
        nested = (r is not None and len(parts) == 5 and parts[2] == "artifacts"
                  and parts[4] == "location" and "parentIndex" in (_get(runs, r, "artifacts", parts[3]) or {}))
        uri, base_id = location.get("uri"), location.get("uriBaseId")
        if not isinstance(uri, str):
            continue  # the schema requires a string; no uri (an index) is fine
        why = uri_reference_problem(uri)
        if why:
            out.append(f"{path}.uri: {why}")
            continue
        scheme = _SCHEME.match(uri)
        if scheme:
            if len(scheme.group(1)) == 1:
                out.append(f"{path}.uri: {uri!r} is a Windows drive path, not a URI "
                           f"(file:///{uri} is)")
            elif scheme.group(1).lower() == "file" and not uri.startswith("file://"):
                out.append(f"{path}.uri: {uri!r}: a file URI is written file://[host]/path")
            if base_id is not None:
                out.append(f"{path}.uriBaseId: {base_id!r} beside the absolute uri {uri!r} "
                           f"(SARIF 3.4.4: absent when uri is absolute)")
            continue
        if nested:
            continue
        if base_id is None:
            out.append(f"{path}.uri: {uri!r} is a relative reference without a uriBaseId (an "
                       f"absolute path is written file://{uri if uri.startswith('/') else '/' + uri}, "
                       f"or relative to a uriBaseId declared in originalUriBaseIds)")
            continue
        bases = _get(runs, r, "originalUriBaseIds") if r is not None else None
        bpath = f"$.runs[{r}].originalUriBaseIds" if r is not None else "originalUriBaseIds"
        why = _resolve_base(bases, base_id, bpath)
        if why:
            out.append(f"{path}.uriBaseId: {why}")
    return out


# ---------------------------------------------------------------------------------------------
# 3. What the options ask for


def parse_rule_levels(text):
    """"RULE=LEVEL,RULE=LEVEL" -> {RULE: LEVEL}; ValueError on a malformed item."""
    levels = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        rule, sep, level = item.rpartition("=")
        if not sep or not rule or level not in LEVELS:
            raise ValueError(f"{item!r} is not RULE=LEVEL with LEVEL one of {', '.join(LEVELS)}")
        levels[rule] = level
    return levels


def option_problems(log, expect_results, expect_rule_levels, exit_code):
    out = []
    runs = _dicts(log.get("runs"))
    if expect_results is not None:
        count = sum(len(run["results"]) for _, run in runs if isinstance(run.get("results"), list))
        if count != expect_results:
            out.append(f"$.runs: {count} results, expected {expect_results} (--expect-results)")
    for rule_id, level in (expect_rule_levels or {}).items():
        seen = 0
        for r, run in runs:
            rules = _get(run, "tool", "driver", "rules") or []
            rule = next((x for _, x in _dicts(rules) if x.get("id") == rule_id), None)
            for i, result in _dicts(run.get("results")):
                if result.get("ruleId", _get(result, "rule", "id")) != rule_id:
                    continue
                seen += 1
                actual = effective_level(result, rule)
                if actual != level:
                    out.append(f"$.runs[{r}].results[{i}]: rule {rule_id!r} at level {actual!r}, "
                               f"expected {level!r} (--expect-rule-levels)")
        if not seen:
            out.append(f"$.runs: no result of rule {rule_id!r}, expected some at level {level!r} "
                       f"(--expect-rule-levels)")
    if exit_code is not None:
        recorded = 0
        for r, run in runs:
            for i, invocation in _dicts(run.get("invocations")):
                if "exitCode" not in invocation:
                    continue
                recorded += 1
                if invocation["exitCode"] != exit_code:
                    out.append(f"$.runs[{r}].invocations[{i}].exitCode: {invocation['exitCode']!r}, "
                               f"expected {exit_code} (--exit-code)")
        if not recorded:
            out.append(f"$.runs: no invocation records an exitCode, expected {exit_code} (--exit-code)")
    return out


# ---------------------------------------------------------------------------------------------


def problems(log, *, expect_results=None, expect_rule_levels=None, exit_code=None,
             no_alerts_for_pass=True, schema=None):
    """Every problem of the SARIF log `log` (a parsed JSON value), as "$.path: message" strings;
    [] when it is right. expect_rule_levels is {rule id: level} or "RULE=LEVEL,..."; schema (a
    parsed JSON schema) replaces the official one, for tests."""
    if isinstance(expect_rule_levels, str):
        expect_rule_levels = parse_rule_levels(expect_rule_levels)
    schema = load_schema() if schema is None else schema
    out = schema_problems(log, schema)
    if not isinstance(log, dict):
        return out
    for r, run in _dicts(log.get("runs")):
        path = f"$.runs[{r}]"
        out += result_level_problems(run, path, no_alerts_for_pass)
        out += rule_problems(run, path)
    official = load_schema()  # the walk needs the official layout, whatever validated the log
    found = objects_by_definition(log, official)
    out += tool_component_problems(found.get("toolComponent", []))
    out += artifact_location_problems(log, found.get("artifactLocation", []))
    out += option_problems(log, expect_results, expect_rule_levels, exit_code)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="check_sarif.py",
        description="Check a SARIF 2.1.0 log flashproof wrote: valid against the official schema "
                    "(offline) and right by the rules the schema cannot express (result kind vs "
                    "level, declared rules with help, real help/information URIs, artifact URIs "
                    "with declared uriBaseIds). Exit 0 when right, 1 with one line per problem on "
                    "stderr (FILE: $.json.path: message), 2 on a usage error.")
    parser.add_argument("sarif", help="the SARIF file")
    parser.add_argument("--expect-results", type=int, metavar="N",
                        help="the runs hold N results in all")
    parser.add_argument("--expect-rule-levels", metavar="RULE=LEVEL,...",
                        help="every result of each RULE has that level (none, note, warning, "
                             "error; an absent level counts as SARIF 3.27.10 defaults it), and "
                             "each RULE has a result")
    parser.add_argument("--exit-code", type=int, metavar="N",
                        help="every runs[].invocations[].exitCode is N (and one is recorded)")
    alerts = parser.add_mutually_exclusive_group()
    alerts.add_argument("--no-alerts-for-pass", dest="no_alerts_for_pass", action="store_true",
                        default=True,
                        help="(on by default) a result of kind \"pass\" states level \"none\", so "
                             "that a consumer ignoring kind shows no alert")
    alerts.add_argument("--allow-implicit-pass-level", dest="no_alerts_for_pass",
                        action="store_false",
                        help="turn --no-alerts-for-pass off: a kind \"pass\" result may leave "
                             "level out (SARIF defaults it to \"none\")")
    args = parser.parse_args(argv)
    try:
        rule_levels = parse_rule_levels(args.expect_rule_levels or "")
    except ValueError as e:
        parser.error(f"--expect-rule-levels: {e}")

    try:
        with open(args.sarif, encoding="utf-8") as f:
            log = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{args.sarif}: $: cannot read a JSON document: {_one_line(e)}", file=sys.stderr)
        return 1
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        print("check_sarif.py: needs python3's jsonschema (Debian: python3-jsonschema; "
              "scripts/setup installs it)", file=sys.stderr)
        return 2
    found = problems(log, expect_results=args.expect_results, expect_rule_levels=rule_levels,
                     exit_code=args.exit_code, no_alerts_for_pass=args.no_alerts_for_pass)
    for problem in found:
        print(f"{args.sarif}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
