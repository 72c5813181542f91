#!/usr/bin/env python3
"""The shipped CI recipe, run as CI runs it (examples/ci/README.md).

examples/ci/flashproof-gate verifies examples/ci/sample-repo (three attention programs: one proved,
one hand-written fold with a planted bug, one training step with dropout whose gated shapes
decline) under each gate setting, and this test checks the exit code of each, the SARIF (the
official 2.1.0 schema and the rules it cannot express: tests/tools/check_sarif.py; no alert for
a proved obligation), the JUnit file, and a baseline that fails only on a newly introduced
regression (a new decline, a new refutation) and not on an unrelated edit. The workflow files are
checked to call the script with the options this test exercises.

Usage: recipe_test.py FLASHPROOF_BINARY SOURCE_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(SOURCE, "tests", "tools"))
import check_sarif  # noqa: E402

GATE = os.path.join(SOURCE, "examples", "ci", "flashproof-gate")
SAMPLE = os.path.join(SOURCE, "examples", "ci", "sample-repo")
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def gate(repo, env, *args):
    out = os.path.join(repo, "flashproof-out")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(["bash", GATE, "--repo", repo, *args], env=env, capture_output=True, text=True, timeout=900)
    return p.returncode, out, p.stdout + p.stderr


def sarif_of(out):
    with open(os.path.join(out, "flashproof.sarif")) as f:
        return json.load(f)


def junit_counts(out):
    root = ET.parse(os.path.join(out, "flashproof.junit.xml")).getroot()
    return {k: int(root.get(k)) for k in ("tests", "failures", "errors", "skipped")}


def results_by_kind(log):
    by = {}
    for r in log["runs"][0]["results"]:
        verdict = r.get("properties", {}).get("verdict") or r.get("properties", {}).get("finding")
        by.setdefault(verdict, []).append(r)
    return by


def main():
    tmp = tempfile.mkdtemp(prefix="flashproof-recipe-")
    try:
        env = dict(os.environ)
        env.update({
            "FLASHPROOF": BINARY,
            "FLASHPROOF_CACHE_SECRET": "recipe-test-secret-0123456789abcdef",
            "FLASHPROOF_GATE_CACHE": os.path.join(tmp, "cache"),
        })
        repo = os.path.join(tmp, "repo")
        shutil.copytree(SAMPLE, repo)

        # 1. The whole sample: the planted bug is refuted under every gate setting.
        code, out, text = gate(repo, env)
        check(code == 1, f"sample repository, default gate: exit 1 (refuted), got {code}\n{text}")
        log = sarif_of(out)
        problems = check_sarif.problems(log, exit_code=1)
        check(not problems, "the SARIF passes the official schema and the rules: " + "; ".join(problems))
        by = results_by_kind(log)
        proved = by.get("exact", []) + by.get("bounded", [])
        check(len(proved) >= 3, f"proved obligations are in the SARIF ({len(proved)})")
        check(all(r["kind"] == "pass" and r["level"] == "none" for r in proved),
              "no alert for a proved obligation (kind pass, level none)")
        check([r["level"] for r in by.get("refuted", [])] == ["error"], "the refuted pair is one error")
        declines = by.get("decline", [])
        check(len(declines) == 2 and all(r["level"] == "note" and r["kind"] == "fail" for r in declines),
              "the dropout step's two declines are notes")
        check(all(r["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId") == "SRCROOT"
                  for r in log["runs"][0]["results"]), "every location is relative to SRCROOT")
        j = junit_counts(out)
        check(j["failures"] == 1 and j["skipped"] == 2 and j["errors"] == 0 and j["tests"] == len(by.get("refuted", [])) + len(proved) + 2,
              f"JUnit: one failure (the refutation), the declines skipped: {j}")
        check(os.path.isdir(os.path.join(out, "counterexamples")), "the counterexample case is in the reports folder")
        for args in (["--expect", "applied"], ["--fail-on", "refuted"], ["--expect", "anything"]):
            code, _, text = gate(repo, env, *args)
            check(code == 1, f"sample repository, {' '.join(args)}: exit 1, got {code}")

        # 2. Without the planted bug, the gate settings decide.
        clean = os.path.join(tmp, "clean")
        shutil.copytree(SAMPLE, clean, ignore=shutil.ignore_patterns("rewrites"))
        code, out, text = gate(clean, env)
        check(code == 0, f"proved and declined programs, default gate: exit 0, got {code}\n{text}")
        code, out, text = gate(clean, env, "--expect", "applied")
        check(code == 3, f"proved and declined programs, --expect applied: exit 3 (a gated shape declined), got {code}")
        log = sarif_of(out)
        check(not check_sarif.problems(log, exit_code=3), "the --expect applied SARIF is valid")
        check(all(r["level"] == "error" for r in results_by_kind(log).get("decline", [])),
              "under --expect applied a decline is an error")
        check(junit_counts(out)["failures"] == 2, "under --expect applied the JUnit fails the two declines")
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        shutil.copy(os.path.join(SAMPLE, "models", "attention.fp"), empty)
        code, out, text = gate(empty, env, "--profile", "default")
        check(code == 3, f"a run that proves nothing (every gate off) fails: exit 3, got {code}")
        check("nothing applied" in text and "--set" in text, "the report says nothing applied and how to change it")

        # 3. The baseline: today's verdicts and declines pass, only what is new fails.
        baseline = os.path.join(tmp, "baseline.json")
        code, _, _ = gate(repo, env, "--write-baseline", baseline)
        check(code == 1 and os.path.isfile(baseline), f"--write-baseline records the run (exit {code})")
        code, out, text = gate(repo, env, "--baseline", baseline, "--expect", "applied")
        check(code == 0, f"against its own baseline the sample passes, known refutation and declines included: got {code}\n{text}")
        log = sarif_of(out)
        check(not check_sarif.problems(log, exit_code=0), "the baseline run's SARIF is valid")
        check({r.get("baselineState") for r in log["runs"][0]["results"]} == {"unchanged"},
              "every result of the baseline run is unchanged")
        # An unrelated edit: comment lines shift every source line; the stable ids survive.
        attention = os.path.join(repo, "models", "attention.fp")
        with open(attention) as f:
            text_before = f.read()
        with open(attention, "w") as f:
            f.write("# reviewed\n# by the team\n" + text_before)
        code, _, text = gate(repo, env, "--baseline", baseline, "--expect", "applied")
        check(code == 0, f"an unrelated edit (lines shifted) is no regression: got {code}\n{text}")
        # A new decline: a softmax written with exp(x - m) inline.
        shutil.copy(os.path.join(SOURCE, "tests", "ci", "inline_softmax.fp"), os.path.join(repo, "models"))
        code, out, text = gate(repo, env, "--baseline", baseline)
        check(code == 3, f"a new program whose softmax declines is a regression: exit 3, got {code}\n{text}")
        check("no-sum-chain" in text and "hint:" in text, "the new decline is reported with its code and hint")
        check(not check_sarif.problems(sarif_of(out), exit_code=3), "the regression run's SARIF is valid")
        os.remove(os.path.join(repo, "models", "inline_softmax.fp"))
        # A new refutation: a second copy of the planted bug.
        for ext in ("src.fp", "tgt.fp", "claim"):
            shutil.copy(os.path.join(repo, "rewrites", "online_fold." + ext), os.path.join(repo, "rewrites", "copy_fold." + ext))
        code, _, text = gate(repo, env, "--baseline", baseline)
        check(code == 1, f"a new refuted pair is a regression: exit 1, got {code}\n{text}")

        # 4. The workflow files call the script with what this test exercised.
        for name in ("github-actions.yml", "gitlab-ci.yml"):
            with open(os.path.join(SOURCE, "examples", "ci", name)) as f:
                body = f.read()
            for needle in ("examples/ci/flashproof-gate", "--baseline", "FLASHPROOF_CACHE_SECRET", "--strip"):
                check(needle in body, f"{name} uses {needle}")
            try:
                import yaml  # python3-yaml (scripts/setup)
                yaml.safe_load(body)
                check(True, f"{name} is YAML")
            except ImportError:
                print(f"skip {name}: python3-yaml is not installed", flush=True)
        with open(os.path.join(SOURCE, "examples", "ci", "github-actions.yml")) as f:
            check("upload-sarif" in f.read(), "the GitHub workflow uploads the SARIF")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} check(s) failed", flush=True)
        return 1
    print("\nthe CI recipe works as shipped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
