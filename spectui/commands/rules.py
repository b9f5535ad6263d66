"""`spectui rules list [--json] | explain ID | test [--rules DIR]`: the diagnosis rule library."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    p_list = sub.add_parser("list", help="list the rules (built-in, user, --rules)")
    p_list.add_argument("--json", action="store_true", help="print one JSON array")
    p_list.add_argument("--rules", metavar="DIR", action="append", default=[], help="extra rules directory")
    p_explain = sub.add_parser("explain", help="show one rule: what it matches, why, the fix")
    p_explain.add_argument("rule_id", metavar="ID", help="rule id, e.g. SPEC003")
    p_explain.add_argument("--rules", metavar="DIR", action="append", default=[], help="extra rules directory")
    p_test = sub.add_parser("test", help="run every rule's [[examples]] (rules without examples fail)")
    p_test.add_argument("--rules", metavar="DIR", action="append", default=[],
                        help="test the rules in DIR instead of the built-in library (repeatable)")
    p_test.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from spectui.core.rules import default_rule_dirs, load_rules

    for directory in args.rules:
        if not Path(directory).is_dir():
            print(f"spectui rules: --rules {directory}: not a directory of rule files", file=sys.stderr)
            return 2
    extra = [Path(d) for d in args.rules]
    if args.rules_command == "test" and extra:
        return _test(*_load_only(extra), args.json)
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    rules, errors = load_rules([*default_rule_dirs(config_home), *extra])
    if args.rules_command == "test":
        return _test(rules, errors, args.json)
    for error in errors:
        print(f"spectui rules: {error}", file=sys.stderr)
    if args.rules_command == "list":
        return _list(rules, args.json)
    return _explain(rules, args.rule_id)


def _load_only(dirs: list[Path]) -> tuple[list[Any], list[str]]:
    """The rules of `dirs` alone (the built-in library is tested by the project's own test suite)."""
    from spectui.core.rules import load_file

    rules: list[Any] = []
    errors: list[str] = []
    seen: dict[str, str] = {}
    for directory in dirs:
        for path in sorted(directory.glob("*.toml")):
            if path.name.startswith("_"):  # data next to the rules (a frame map), not a rule
                continue
            rule, error = load_file(path, str(path))
            if error:
                errors.append(error)
            elif rule is not None and rule.id in seen:
                errors.append(f"{path}: rule {rule.id}: field 'id': duplicate of {seen[rule.id]}")
            elif rule is not None:
                seen[rule.id] = str(path)
                rules.append(rule)
    return rules, errors


def _order(rules: list[Any]) -> list[Any]:
    return sorted(rules, key=lambda r: r.id)


def _list(rules: list[Any], as_json: bool) -> int:
    if as_json:
        import json

        rows = [{"id": r.id, "title": r.title, "category": r.category, "severity": r.severity,
                 "priority": r.priority, "fallback": r.fallback, "versions": r.versions, "file": r.path,
                 "examples": len(r.examples), "links": list(r.links)} for r in _order(rules)]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return 0
    width = max((len(r.category) for r in rules), default=8)
    for r in _order(rules):
        print(f"{r.id:<9} {r.severity:<7} {r.category:<{width}}  {r.title}")
    print(f"{len(rules)} rules")
    return 0


def _explain(rules: list[Any], rule_id: str) -> int:
    by_id = {r.id.upper(): r for r in rules}
    rule = by_id.get(rule_id.upper())
    if rule is None:
        import difflib

        close = difflib.get_close_matches(rule_id.upper(), list(by_id), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see `spectui rules list`)"
        print(f"spectui rules: no rule {rule_id}{hint}", file=sys.stderr)
        return 2
    out = [f"{rule.id}  {rule.title}",
           f"category: {rule.category}   severity: {rule.severity}   priority: {rule.priority}"
           + ("   fallback" if rule.fallback else "") + (f"   versions: {rule.versions}" if rule.versions else ""),
           f"file: {rule.path}", "", "matches (" + rule.root.kind + "):"]
    out += ["  " + line for line in _describe(rule.root)]
    out += ["", "diagnosis:"] + [f"  {t.source}" for t in rule.diagnosis]
    out += ["", "why:", f"  {rule.explanation}"]
    if rule.fixes:
        out += ["", "fix (first alternative whose values are all known):"]
        for fix in rule.fixes:
            parts = [f"{flag} = {expr.source}" for flag, expr in fix.set] + [f"unset {f}" for f in fix.unset]
            cond = f"  [when {fix.when.source}]" if fix.when is not None else ""
            out.append("  - " + "; ".join(parts) + cond)
    if rule.links:
        out += ["", "links:"] + [f"  {link}" for link in rule.links]
    fire = sum(1 for ex in rule.examples if ex.expect == "fire")
    out += ["", f"examples: {fire} fire, {len(rule.examples) - fire} no-fire (spectui rules test)"]
    print("\n".join(out))
    return 0


def _describe(node: Any, depth: int = 0) -> list[str]:
    from spectui.core.rules import CConfig, CGroup, CLog, CMetric

    if isinstance(node, CGroup):
        lines: list[str] = []
        for child in node.of:
            if isinstance(child, CGroup):
                lines.append(f"{child.kind} of:")
                lines += ["  " + line for line in _describe(child, depth + 1)]
            else:
                lines += _describe(child, depth + 1)
        return lines
    if isinstance(node, CLog):
        bits = [f"log {node.record}"]
        for name in ("contains", "milestone"):
            value = getattr(node, name)
            if value:
                bits.append(f"{name} {value!r}")
        if node.exc_types:
            bits.append("type " + "|".join(sorted(node.exc_types)))
        cat = getattr(node, "catalogue", None)
        if cat is not None:
            bits.append(f"SGLang's text {' | '.join(map(repr, cat.refs))} ({len(cat.ids)} catalogue messages)")
        for name, word in (("subsystems", "died in"), ("through", "through"), ("outside", "not through")):
            value = getattr(node, name, None)
            if value:
                bits.append(f"{word} " + "|".join(sorted(value)))
        for name in ("pattern", "message", "frame", "frame_file", "source", "exclude"):
            value = getattr(node, name)
            if value is not None:
                bits.append(f"{name} /{value.pattern}/")
        return ["- " + ", ".join(bits)]
    if isinstance(node, CMetric):
        return [f"- metric: {node.when.source}  (window {node.window}, >= {node.min_samples} samples "
                f"after {node.warmup} warm-up)"]
    if not isinstance(node, CConfig):  # a draft clause (compile.CDraft): an inspector finding
        picks = [f"{name} {'|'.join(sorted(v))}" for name, v in
                 (("code", node.codes), ("category", node.categories), ("severity", node.severities)) if v]
        return ["- draft checkpoint finding: " + (", ".join(picks) or "any")]
    return [f"- config: {node.when.source}"]


def _test(rules: list[Any], errors: list[str], as_json: bool) -> int:
    from spectui.core.rules import run_all

    results = run_all(_order(rules))
    failed = [r for r in results if not r.ok]
    untested = [r.id for r in _order(rules) if not r.examples]
    one_sided = [r.id for r in _order(rules) if r.examples and {e.expect for e in r.examples} != {"fire", "no-fire"}]
    covered = len(rules) - len(untested)
    refs = _catalogue_refs(rules)
    ok = not failed and not untested and not errors
    if as_json:
        import json

        sys.stdout.write(json.dumps({
            "rules": len(rules), "examples": len(results), "passed": len(results) - len(failed),
            "failed": [{"rule": r.rule, "example": r.index, "expect": r.expect, "detail": r.detail} for r in failed],
            "without_examples": untested, "without_both_kinds": one_sided, "load_errors": errors,
            "coverage": covered / len(rules) if rules else 0.0, "ok": ok, "catalogue": refs,
        }, ensure_ascii=False) + "\n")
        return 0 if ok else 1
    for error in errors:
        print(f"LOAD  {error}")
    for r in failed:
        print(f"FAIL  {r.rule} example {r.index} (expect {r.expect}): {r.detail}")
    for rule_id in untested:
        print(f"FAIL  {rule_id}: no [[examples]]")
    for rule_id in one_sided:
        print(f"note  {rule_id}: examples of one kind only (add a fire and a no-fire example)")
    if refs["references"]:
        # Each reference resolved when its rule loaded (else a LOAD line above): SGLang still prints the text.
        print(f"catalogue: {refs['references']} references in {refs['rules']} rules, each found in SGLang's own "
              f"messages ({refs['releases']} releases {refs['first']}..{refs['last']})")
    pct = 100 * covered / len(rules) if rules else 0
    print(f"{len(results) - len(failed)}/{len(results)} examples pass; {covered}/{len(rules)} rules have "
          f"examples ({pct:.0f}%); {len(errors)} files did not load")
    return 0 if ok else 1


def _catalogue_refs(rules: list[Any]) -> dict[str, Any]:
    """How many catalogue references the loaded rules make (a rule whose reference is gone did not load)."""
    from spectui.core.rules import messages as rule_messages

    refs = [(r.id, ref) for r in rules for c in r.log_clauses if getattr(c, "catalogue", None) is not None
            for ref in c.catalogue.refs]
    cat = rule_messages.load_catalogue()
    return {"references": len(refs), "rules": len({rid for rid, _ in refs}),
            "releases": len(cat.releases) if cat else 0,
            "first": cat.releases[0] if cat else None, "last": cat.releases[-1] if cat else None}
