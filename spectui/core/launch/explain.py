"""Plain-words explanations for resolve(): why SGLang failed, and every requested-vs-effective difference."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spectui.core.launch import resolution as R
from spectui.core.launch.notes import FlagNote, Override
from spectui.core.versions import Version

if TYPE_CHECKING:
    from spectui.core.launch.catalogue import FlagCatalogue


def explain_error(type_: str, message: str, requested: Mapping[str, Any]) -> str:
    """What to change so that SGLang stops raising this."""
    topk = requested.get("speculative_eagle_topk")
    draft = requested.get("speculative_num_draft_tokens")
    steps = requested.get("speculative_num_steps")
    if type_ == "AssertionError" and message == "":
        given = " and ".join(f for f, val in (("--speculative-eagle-topk", topk),
                                             ("--speculative-num-draft-tokens", draft)) if val is not None)
        hint = ""
        if draft is not None and topk in (None, 1):
            hint = (f" For a chain of {draft} draft tokens: --speculative-num-steps {max(draft - 1, 1)} "
                    f"--speculative-eagle-topk 1 --speculative-num-draft-tokens {draft}.")
        verb = "were" if " and " in given else "was"
        return (f"SGLang's bare `assert` fired: {given or 'topk or draft tokens'} {verb} given without "
                "--speculative-num-steps, and SGLang only auto-chooses the three values when all three are "
                f"unset. Fix: add --speculative-num-steps, or drop all three flags to get the defaults.{hint}")
    if type_ == "TypeError" and message == R.TYPEERROR_NONE_GT_INT:
        chain = f" (then draft tokens = {steps + 1})" if isinstance(steps, int) else ""
        return ("--speculative-num-steps was given without --speculative-eagle-topk: SGLang compares the "
                "unset topk with 1 and crashes with this TypeError. Fix: add --speculative-eagle-topk 1 for "
                f"a chain{chain}, or a topk > 1 with --speculative-num-draft-tokens for a tree.")
    if "page_size" in message and "speculative_eagle_topk" in message:
        return ("topk > 1 (a draft tree) with --page-size > 1 needs a paged-tree-capable attention backend. "
                "Fix: --page-size 1, or --attention-backend flashinfer (fa3 from 0.5.6, triton from 0.5.15), "
                "or --speculative-eagle-topk 1.")
    if message.startswith("Ngram speculative decoding only supports"):
        return "NGRAM cannot run on this device in this release. Fix: run on a CUDA GPU (--device cuda)."
    if "does not support dp attention" in message:
        return "Fix: drop --enable-dp-attention / --attn-dp-size, or use EAGLE/EAGLE3."
    if message.startswith("Unknown speculative algorithm name"):
        return f"Fix: use one of {', '.join(R.BUILTIN_ALGORITHMS[:6])} (NEXTN is SGLang's MTP name)."
    if message == R.TRTLLM_TOPK:
        return "Fix: --speculative-eagle-topk 1, or another --attention-backend (flashinfer, fa3)."
    if message == R.SPEC_V2_TOPK:
        return "Spec v2 (SGLANG_ENABLE_SPEC_V2=1) only runs chains. Fix: topk 1, or unset SGLANG_ENABLE_SPEC_V2."
    if message.endswith("is deprecated"):
        return f"SGLang rejects this deprecated flag with a ValueError. Fix: remove {message.split()[0]}."
    if message == R.DFLASH_NO_DRAFT:
        return "Fix: add --speculative-draft-model-path pointing at the DFLASH draft."
    if message.startswith("Only EAGLE and DSPARK speculative algorithms are supported for"):
        return ("DeepSeek-V4's own check runs before SGLang renames NEXTN to EAGLE (and before it upper-cases "
                "names), so NEXTN is refused here. Fix: --speculative-algorithm EAGLE --speculative-eagle-topk 1 "
                "(the MTP layers come from the checkpoint), or DSPARK.")
    if message.startswith("Only EAGLE speculative algorithm with topk == 1 is supported for"):
        return ("DeepSeek-V4 runs EAGLE only as a chain, and checks before SGLang auto-chooses topk, so an "
                "omitted topk fails too. Fix: pass --speculative-eagle-topk 1 explicitly.")
    return f"SGLang raises {type_} while resolving the arguments: {message}"


def explain_differences(requested: Mapping[str, Any], effective: Mapping[str, Any],
                        warnings: Sequence[str], ver: Version) -> list[FlagNote]:
    """One note per value SGLang changed or chose for the speculative setup."""

    notes: list[FlagNote] = []
    algo = effective.get("speculative_algorithm")
    if algo is None:
        return notes
    steps, topk = effective.get("speculative_num_steps"), effective.get("speculative_eagle_topk")
    draft = effective.get("speculative_num_draft_tokens")
    req_draft, req_topk = requested.get("speculative_num_draft_tokens"), requested.get("speculative_eagle_topk")
    if requested.get("speculative_algorithm") not in (None, algo):
        notes.append(FlagNote("algorithm-renamed", "info",
                              f"--speculative-algorithm {requested['speculative_algorithm']} runs as {algo}",
                              "SGLang treats NEXTN (MTP) as EAGLE and upper-cases names."))
    if algo == "NGRAM":
        if req_topk is not None and req_topk != topk:
            notes.append(FlagNote(
                "ngram-topk-overridden", "warning", f"--speculative-eagle-topk {req_topk} becomes {topk}",
                "NGRAM always sets topk to --speculative-ngram-max-bfs-breadth; edit that flag instead.",
                fix_set=(("--speculative-ngram-max-bfs-breadth", str(req_topk)),),
                fix_unset=("--speculative-eagle-topk",)))
    elif req_draft is not None and req_draft != draft and topk == 1:
        fix = (("--speculative-num-steps", str(max(req_draft - 1, 1))),)
        notes.append(FlagNote(
            "draft-tokens-adjusted", "warning",
            f"--speculative-num-draft-tokens {req_draft} becomes {draft}",
            f"With --speculative-eagle-topk 1 SGLang forces draft tokens = num_steps + 1 = {steps} + 1 "
            f"(warning: \"{R.ADJUST}\"). Your {req_draft} is ignored. For a chain of {req_draft} draft tokens "
            f"use --speculative-num-steps {max(req_draft - 1, 1)}; or a topk > 1 for a tree of {req_draft}.",
            fix_set=fix))
    elif req_draft is None and draft is not None and requested.get("speculative_num_steps") is not None:
        notes.append(FlagNote("draft-tokens-derived", "info", f"speculative_num_draft_tokens = {draft}",
                              "Not given: SGLang derived it (steps + 1 for topk 1)."))
    auto = all(requested.get(k) is None for k in
               ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"))
    if auto and algo in R.EAGLE_FAMILY and steps is not None:
        notes.append(FlagNote("auto-params", "info",
                              f"steps/topk/draft tokens auto-chosen: {steps}/{topk}/{draft}",
                              "None of the three was given, so SGLang picked its defaults for this target "
                              "architecture."))
    if requested.get("max_running_requests") is None and effective.get("max_running_requests") == 48:
        notes.append(FlagNote(
            "max-running-48", "info", "max running requests capped at 48",
            "Speculative decoding resets an unset --max-running-requests to 48, and CUDA graphs are only "
            "captured up to that batch size. Set --max-running-requests for more concurrency."))
    if not requested.get("disable_overlap_schedule") and effective.get("disable_overlap_schedule"):
        notes.append(FlagNote("overlap-off", "info", "overlap scheduler disabled",
                              "This release runs this speculative algorithm without the overlap scheduler "
                              "(expected, costs some throughput)."))
    if requested.get("speculative_draft_model_path") is None and effective.get("speculative_draft_model_path"):
        notes.append(FlagNote("mtp-draft-path", "info",
                              "draft model = the target checkpoint (built-in MTP layers)",
                              "The target architecture carries its own MTP draft, so SGLang uses the target "
                              "path as the draft path."))
    if requested.get("max_running_requests") is None and any(w.startswith("Setting max_running_requests to")
                                                            for w in warnings):
        notes.append(FlagNote(
            "max-running-model", "info", f"max running requests set to {effective.get('max_running_requests')}",
            "This target architecture sets its own --max-running-requests default before the speculative rules "
            "run (so the reset to 48 does not apply). Set --max-running-requests to choose."))
    if R.DSMTP in warnings:
        notes.append(FlagNote("mtp-draft-path-given", "info", "draft path given for an MTP target",
                              "SGLang notes the target already has MTP layers; the given draft is still used."))
    return notes


_LABELS = {"speculative_num_steps": "num steps", "speculative_eagle_topk": "eagle topk",
           "speculative_num_draft_tokens": "draft tokens", "speculative_algorithm": "algorithm",
           "speculative_draft_model_path": "draft model", "enable_mixed_chunk": "mixed chunk",
           "max_running_requests": "max running requests", "page_size": "page size"}


def find_overrides(requested: Mapping[str, Any], effective: Mapping[str, Any]) -> list[Override]:
    """Every value given on the command line that SGLang resolves to something else (an override is never
    "ok"): what was asked, what SGLang will use, why, and the flags that get what was asked. A rename of
    the same algorithm (NEXTN runs as EAGLE, names upper-cased) is not an override."""
    out: list[Override] = []
    algo = effective.get("speculative_algorithm")
    steps, topk = effective.get("speculative_num_steps"), effective.get("speculative_eagle_topk")
    for name, asked in requested.items():
        if name not in effective:
            continue
        eff = effective[name]
        if asked == eff or (isinstance(asked, (int, float)) and not isinstance(asked, bool)
                            and isinstance(eff, (int, float)) and float(asked) == float(eff)):
            continue
        if name == "speculative_algorithm" and (str(asked).upper() == eff or
                                                (str(asked).upper() == "NEXTN" and eff == "EAGLE")):
            continue
        flag = "--" + name.replace("_", "-")
        why, fix, fix_set, fix_unset = _override_why(name, asked, eff, algo, steps, topk, effective)
        out.append(Override(flag, name, asked, eff, why, fix, fix_set, fix_unset, _LABELS.get(name, name)))
    return out


def _override_why(name: str, asked: Any, eff: Any, algo: Any, steps: Any, topk: Any,
                  effective: Mapping[str, Any]) -> tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...]]:
    if name == "speculative_num_draft_tokens" and algo in R.EAGLE_FAMILY and topk == 1 and isinstance(asked, int):
        want = max(asked - 1, 1)
        return (f"topk 1 makes it steps + 1 ({steps} + 1)",
                f"--speculative-num-steps {want} for a chain of {asked} draft tokens, or a topk > 1 for a tree",
                (("--speculative-num-steps", str(want)),), ())
    if name == "speculative_eagle_topk" and algo == "NGRAM":
        return ("NGRAM sets topk to --speculative-ngram-max-bfs-breadth",
                f"--speculative-ngram-max-bfs-breadth {asked}",
                (("--speculative-ngram-max-bfs-breadth", str(asked)),), ("--speculative-eagle-topk",))
    if name == "speculative_eagle_topk" and eff == 1 and (effective.get("page_size") or 1) > 1:
        return ("this release runs no draft tree with --page-size > 1", "--page-size 1",
                (("--page-size", "1"),), ())
    if name in ("speculative_num_steps", "speculative_eagle_topk") and algo == "DFLASH":
        return ("DFLASH drafts one block: steps and topk are always 1",
                f"remove {'--' + name.replace('_', '-')} (the block size is --speculative-num-draft-tokens)",
                (), ("--" + name.replace("_", "-"),))
    if name == "enable_mixed_chunk" and eff is False:
        return (f"this release runs {algo} without mixed chunked prefill", "remove --enable-mixed-chunk",
                (), ("--enable-mixed-chunk",))
    return ("SGLang changes it while resolving the arguments", "", (), ())


def explain_argparse(message: str, cat: FlagCatalogue, args: Sequence[str] = ()) -> list[FlagNote]:
    """Did-you-mean notes for an argparse error line (the text after "error: ")."""
    from spectui.core.launch.suggest import FOREIGN_NOTES

    notes: list[FlagNote] = []
    if message.startswith("unrecognized arguments: "):
        words = message[len("unrecognized arguments: "):].split()
        for i, word in enumerate(words):
            if not word.startswith("-"):
                continue
            flag = word.split("=", 1)[0]
            value = word.split("=", 1)[1] if "=" in word else (
                words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None)
            notes.append(_unrecognized_note(flag, value, cat.suggest(flag), FOREIGN_NOTES.get(flag)))
    elif message.startswith("ambiguous option: "):
        m = re.match(r"ambiguous option: (\S+?)(?:=\S+)? could match (.+)$", message)
        if m:
            flag, cands = m.group(1), m.group(2).split(", ")
            meant = _AMBIGUOUS_MEANT.get(flag)
            why = f" {meant[1]}" if meant and meant[0] in cands else ""
            notes.append(FlagNote(
                "ambiguous-flag", "error", f"{flag} is an ambiguous abbreviation in SGLang {cat.version}",
                f"argparse accepts unique prefixes only; {flag} could be {', '.join(cands)}.{why} "
                "Write the full flag name.",
                fix_set=((meant[0], _value_after(args, flag)),) if meant and why else (),
                fix_unset=(flag,)))
    elif (m := re.match(r"argument (\S+?)(?:/\S+)?: invalid choice: '([^']*)' \(choose from (.+)\)$", message)):
        flag, val = m.group(1), m.group(2)
        choices = [c.strip(" '") for c in m.group(3).split(",")]
        same = [c for c in choices if c.lower() == val.lower()]
        fix = ((flag, same[0]),) if same else ()
        hint = (f"This release's choices are case-sensitive: use {same[0]}." if same
                else f"Choose one of {', '.join(choices)}.")
        notes.append(FlagNote("invalid-choice", "error", f"{flag} {val} is not a valid choice", hint,
                              fix_set=fix))
    elif (m := re.match(r"argument (\S+?)(?:/\S+)?: invalid (\w+) value: '([^']*)'", message)):
        notes.append(FlagNote("invalid-value", "error", f"{m.group(1)} needs a {m.group(2)} value",
                              f"{m.group(3)!r} is not a valid {m.group(2)}."))
    elif message.startswith("the following arguments are required"):
        text = "Give the model with --model-path <dir or HF repo id>."
        if args and not args[0].startswith("-"):
            text += (f" The leading {args[0]!r} is not read as the model: SGLang's parser takes no positional "
                     "argument; only `sglang serve <model>` (0.5.18+) treats a first bare word as the model path.")
        notes.append(FlagNote("missing-required", "error", "--model-path is required", text))
    return notes


# Abbreviations that were unique (or exact) in older releases and became ambiguous: what they meant then
# (docs/REFERENCE.md §1.4 "Argparse abbreviation is ON" table).
_AMBIGUOUS_MEANT = {
    "--speculative-draft": ("--speculative-draft-model-path",
                            "Up to 0.5.1 it was a unique prefix of --speculative-draft-model-path."),
    "--cuda-graph-max-bs": ("--cuda-graph-max-bs-decode",
                            "It was one flag up to 0.5.12; 0.5.15 split it into a decode and a prefill limit, "
                            "and the decode one is the old meaning."),
}


def _unrecognized_note(flag: str, value: str | None, cands: list[str], why: str | None) -> FlagNote:

    if flag == "--num-speculative-tokens" and value and value.isdigit() and cands:
        n = int(value)
        return FlagNote(
            "foreign-flag", "error", f"{flag} is not an SGLang flag (did you mean --speculative-num-steps?)",
            f"{why}. For {n} chained draft tokens: --speculative-num-steps {n} --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {n + 1}.",
            fix_set=(("--speculative-num-steps", str(n)), ("--speculative-eagle-topk", "1"),
                     ("--speculative-num-draft-tokens", str(n + 1))),
            fix_unset=(flag,))
    mean = f" (did you mean {' / '.join(cands[:3])}?)" if cands else ""
    text = (why + ". " if why else "") + (
        f"SGLang has no {flag}; closest: {', '.join(cands[:3])}." if cands else f"SGLang has no {flag}.")
    if "_" in flag:
        text += " SGLang flags use dashes, never underscores."
    fix_set = ((cands[0], value or ""),) if cands and len(cands) >= 1 and value is not None else ()
    return FlagNote("unrecognized-flag", "error", f"{flag} is not an SGLang flag{mean}", text,
                    fix_set=fix_set, fix_unset=(flag,))


def _value_after(args: Sequence[str], flag: str) -> str:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return ""


def error_fix(type_: str, message: str, requested: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """A flag patch that gets past this resolution error, when one is clear: (set, unset)."""
    topk = requested.get("speculative_eagle_topk")
    draft = requested.get("speculative_num_draft_tokens")
    steps = requested.get("speculative_num_steps")
    if type_ == "AssertionError" and message == "":
        if topk in (None, 1) and isinstance(draft, int):
            return {"--speculative-num-steps": str(max(draft - 1, 1)), "--speculative-eagle-topk": "1"}, []
        return {}, ["--speculative-eagle-topk", "--speculative-num-draft-tokens"]
    if type_ == "TypeError" and message == R.TYPEERROR_NONE_GT_INT and isinstance(steps, int):
        return {"--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": str(steps + 1)}, []
    if "page_size" in message and "speculative_eagle_topk" in message:
        return {"--page-size": "1"}, []
    if message.startswith("Only EAGLE and DSPARK speculative algorithms are supported for"):
        return {"--speculative-algorithm": "EAGLE", "--speculative-eagle-topk": "1"}, []
    if message.startswith("Only EAGLE speculative algorithm with topk == 1 is supported for"):
        return {"--speculative-eagle-topk": "1"}, []
    return {}, []
