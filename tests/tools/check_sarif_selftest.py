#!/usr/bin/env python3
"""Self-test of check_sarif.py (ctest: sarif_checker_selftest): a minimal valid SARIF log passes,
and each broken variant of it fails with the expected problem at the expected JSON path. The
network is shut off for the whole test: the checker must never reach for it."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_sarif  # noqa: E402

NETWORK_ATTEMPTS = []


def _no_network(*args, **kwargs):
    NETWORK_ATTEMPTS.append(args)
    raise OSError("the self-test shuts off the network")


socket.socket.connect = _no_network
socket.socket.connect_ex = _no_network
socket.create_connection = _no_network
socket.getaddrinfo = _no_network


def valid_log():
    def result(rule, index, kind, level, line, location):
        r = {"ruleId": rule, "ruleIndex": index, "message": {"text": f"{rule} {kind}"},
             "locations": [{"physicalLocation": {"artifactLocation": location,
                                                 "region": {"startLine": line}}}]}
        if kind is not None:
            r["kind"] = kind
        if level is not None:
            r["level"] = level
        return r

    def rule(rule_id):
        return {"id": rule_id, "name": rule_id,
                "shortDescription": {"text": f"obligations of {rule_id}"},
                "help": {"text": f"how {rule_id} is proved", "markdown": f"how `{rule_id}` is proved"},
                "helpUri": "https://github.com/flashproof/flashproof/blob/main/docs/verify.md"}

    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "flashproof", "version": "0.1.0",
                "informationUri": "https://github.com/flashproof/flashproof",
                "rules": [rule("online-softmax.normalizer-scan"), rule("online-softmax.value-pass-hoist")]}},
            "originalUriBaseIds": {
                "ROOT": {"uri": "file:///srv/repo/"},
                "SRCROOT": {"uri": "src/", "uriBaseId": "ROOT"},
                "%CWD%": {"uri": "file:///tmp/run%20dir/"}},
            "invocations": [{"executionSuccessful": True, "exitCode": 1}],
            "artifacts": [{"location": {"uri": "a.fp", "uriBaseId": "SRCROOT"}},
                          {"location": {"uri": "inner/b.txt"}, "parentIndex": 0}],
            "results": [
                result("online-softmax.normalizer-scan", 0, "pass", "none", 45,
                       {"uri": "a.fp", "uriBaseId": "SRCROOT"}),
                result("online-softmax.value-pass-hoist", 1, "fail", "error", 92,
                       {"uri": "file:///tmp/a.fp"}),
                result("online-softmax.value-pass-hoist", 1, None, None, 93,
                       {"uri": "b%20c.fp", "uriBaseId": "%CWD%"}),
            ],
        }],
    }


def broken(change):
    log = valid_log()
    change(log)
    return log


def run0(log):
    return log["runs"][0]


def set_in(obj, path, value):
    *head, last = path
    for key in head:
        obj = obj[key]
    obj[last] = value


R0 = "$.runs[0].results[0]"
LOC0 = f"{R0}.locations[0].physicalLocation.artifactLocation"
RULE0 = "$.runs[0].tool.driver.rules[0]"


class CheckSarif(unittest.TestCase):
    def assertProblem(self, log, path, words, **options):
        """The checker finds exactly one problem, at `path`, mentioning every one of `words`."""
        found = check_sarif.problems(log, **options)
        self.assertEqual(len(found), 1, "\n".join(found))
        self.assertTrue(found[0].startswith(path + ":"), f"{found[0]!r} is not at {path}")
        for word in words:
            self.assertIn(word, found[0])
        return found[0]

    def test_valid_log_passes(self):
        self.assertEqual(check_sarif.problems(valid_log()), [])
        self.assertEqual(check_sarif.problems(valid_log(), expect_results=3, exit_code=1,
                                              expect_rule_levels="online-softmax.normalizer-scan=none"), [])

    # 1. The schema

    def test_schema_version(self):
        self.assertProblem(broken(lambda l: l.update(version="2.0")), "$.version",
                           ["schema", "'2.0' is not one of ['2.1.0']"])

    def test_schema_unknown_property(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].update(severity="high")), R0,
                           ["schema", "Additional properties", "severity"])

    def test_schema_message_required(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].pop("message")), R0,
                           ["schema", "'message' is a required property"])

    def test_schema_region_needs_a_start(self):  # an errata-01 rule (SARIF 3.30.2)
        problem = self.assertProblem(
            broken(lambda l: set_in(run0(l)["results"][0], ["locations", 0, "physicalLocation", "region"],
                                    {"endLine": 3})),
            f"{R0}.locations[0].physicalLocation.region", ["schema"])
        self.assertRegex(problem, "startLine|charOffset|byteOffset")

    def test_schema_never_fetches(self):
        remote = {"$schema": "http://json-schema.org/draft-07/schema#",
                  "$ref": "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/x/schema.json"}
        found = check_sarif.schema_problems(valid_log(), remote)
        self.assertEqual(len(found), 1, found)
        self.assertIn("could not run", found[0])
        self.assertEqual(NETWORK_ATTEMPTS, [])

    # 2. kind and level (SARIF 3.27.10)

    def test_pass_with_level_note(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].update(level="note")), f"{R0}.level",
                           ["'note'", "kind is 'pass'", "3.27.10"])

    def test_fail_with_level_none(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][1].update(level="none")),
                           "$.runs[0].results[1].level", ["\"none\"", "kind is 'fail'"])

    def test_no_kind_with_level_none(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][2].update(level="none")),
                           "$.runs[0].results[2].level", ["kind is absent"])

    def test_pass_without_level(self):
        log = broken(lambda l: run0(l)["results"][0].pop("level"))
        self.assertProblem(log, R0, ["--no-alerts-for-pass"])
        self.assertEqual(check_sarif.problems(log, no_alerts_for_pass=False), [])

    # 2. rules

    def test_undeclared_rule(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].update(ruleId="nope", ruleIndex=-1)),
                           f"{R0}.ruleId", ["'nope'", "not declared"])

    def test_rule_index_elsewhere(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].update(ruleIndex=1)), f"{R0}.ruleIndex",
                           ["points at the rule 'online-softmax.value-pass-hoist'"])

    def test_rule_index_out_of_range(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0].update(ruleIndex=7)), f"{R0}.ruleIndex",
                           ["not an index", "2 rules"])

    def test_no_rule_id(self):
        self.assertProblem(broken(lambda l: [run0(l)["results"][0].pop(k) for k in ("ruleId", "ruleIndex")]),
                           R0, ["no ruleId"])

    def test_rule_without_help(self):
        self.assertProblem(broken(lambda l: run0(l)["tool"]["driver"]["rules"][0].pop("help")),
                           f"{RULE0}.help.text", ["missing or empty"])

    def test_rule_with_empty_short_description(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["tool"]["driver"]["rules"][0],
                                                   ["shortDescription", "text"], " ")),
                           f"{RULE0}.shortDescription.text", ["missing or empty"])

    def test_duplicate_rule_id(self):
        def change(log):
            rules = run0(log)["tool"]["driver"]["rules"]
            rules[1]["id"] = rules[0]["id"]
            for r in run0(log)["results"]:
                r.update(ruleId=rules[0]["id"], ruleIndex=0)
        self.assertProblem(broken(change), "$.runs[0].tool.driver.rules[1].id", ["also the id of rules[0]"])

    def test_placeholder_help_uri(self):
        for uri in ("https://flashproof.dev/docs/verify", "https://docs.flashproof.dev/x",
                    "http://example.com/help", "https://www.example.org/", "http://localhost:8000/",
                    "https://flashproof.test/"):
            with self.subTest(uri=uri):
                self.assertProblem(broken(lambda l: run0(l)["tool"]["driver"]["rules"][0].update(helpUri=uri)),
                                   f"{RULE0}.helpUri", ["placeholder"])

    def test_help_uri_not_web(self):
        self.assertProblem(broken(lambda l: run0(l)["tool"]["driver"]["rules"][0].update(helpUri="docs/verify.md")),
                           f"{RULE0}.helpUri", ["not an absolute http(s) URI"])

    def test_placeholder_information_uri(self):
        self.assertProblem(broken(lambda l: run0(l)["tool"]["driver"].update(informationUri="https://flashproof.dev")),
                           "$.runs[0].tool.driver.informationUri", ["'flashproof.dev'", "placeholder"])

    # 2. artifact URIs

    def test_relative_uri_without_base(self):
        self.assertProblem(broken(lambda l: run0(l)["results"][0]["locations"][0]["physicalLocation"]
                                  ["artifactLocation"].pop("uriBaseId")),
                           f"{LOC0}.uri", ["relative reference without a uriBaseId"])

    def test_absolute_path_is_a_relative_reference(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][0],
                                                   ["locations", 0, "physicalLocation", "artifactLocation"],
                                                   {"uri": "/tmp/a.fp"})),
                           f"{LOC0}.uri", ["relative reference without a uriBaseId", "file:///tmp/a.fp"])

    def test_undeclared_base(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][0], ["locations", 0, "physicalLocation",
                                                                           "artifactLocation", "uriBaseId"], "NOPE")),
                           f"{LOC0}.uriBaseId", ["'NOPE' is not declared", "$.runs[0].originalUriBaseIds"])

    def test_no_original_uri_base_ids(self):
        problems = check_sarif.problems(broken(lambda l: run0(l).pop("originalUriBaseIds")))
        self.assertEqual(len(problems), 3, problems)  # the result's, the artifact's, the third result's
        self.assertTrue(all("is not declared" in p for p in problems), problems)

    def test_base_not_ending_with_slash(self):
        self.assertProblem(broken(lambda l: run0(l)["originalUriBaseIds"]["%CWD%"].update(uri="file:///tmp/run")),
                           "$.runs[0].results[2].locations[0].physicalLocation.artifactLocation.uriBaseId",
                           ["does not end with \"/\"", "originalUriBaseIds[\"%CWD%\"]"])

    def test_base_not_a_file_uri(self):
        self.assertProblem(broken(lambda l: run0(l)["originalUriBaseIds"]["%CWD%"].update(uri="https://x.org/")),
                           "$.runs[0].results[2].locations[0].physicalLocation.artifactLocation.uriBaseId",
                           ["not a file:// URI"])

    def test_base_loop(self):
        problems = check_sarif.problems(
            broken(lambda l: run0(l)["originalUriBaseIds"]["ROOT"].update(uri="w/", uriBaseId="SRCROOT")))
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(all("loops" in p for p in problems), problems)
        self.assertEqual(sorted(p.split(":")[0] for p in problems),
                         ["$.runs[0].artifacts[0].location.uriBaseId", f"{LOC0}.uriBaseId"])

    def test_base_without_uri(self):
        self.assertProblem(broken(lambda l: run0(l)["originalUriBaseIds"]["%CWD%"].pop("uri")),
                           "$.runs[0].results[2].locations[0].physicalLocation.artifactLocation.uriBaseId",
                           ["has no uri"])

    def test_absolute_uri_with_base(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][1], ["locations", 0, "physicalLocation",
                                                                           "artifactLocation", "uriBaseId"], "ROOT")),
                           "$.runs[0].results[1].locations[0].physicalLocation.artifactLocation.uriBaseId",
                           ["beside the absolute uri"])

    def test_file_uri_without_slashes(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][1], ["locations", 0, "physicalLocation",
                                                                           "artifactLocation", "uri"], "file:/tmp/a.fp")),
                           "$.runs[0].results[1].locations[0].physicalLocation.artifactLocation.uri",
                           ["file://"])

    def test_windows_path(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][1], ["locations", 0, "physicalLocation",
                                                                           "artifactLocation", "uri"], "C:/repo/a.fp")),
                           "$.runs[0].results[1].locations[0].physicalLocation.artifactLocation.uri",
                           ["Windows drive path"])

    def test_space_in_uri(self):
        self.assertProblem(broken(lambda l: set_in(run0(l)["results"][2], ["locations", 0, "physicalLocation",
                                                                           "artifactLocation", "uri"], "b c.fp")),
                           "$.runs[0].results[2].locations[0].physicalLocation.artifactLocation.uri",
                           ["not a URI reference", "%-encoded"])

    def test_artifact_and_invocation_locations(self):
        self.assertProblem(broken(lambda l: run0(l)["artifacts"][0]["location"].pop("uriBaseId")),
                           "$.runs[0].artifacts[0].location.uri", ["without a uriBaseId"])
        self.assertProblem(broken(lambda l: run0(l)["invocations"][0].update(executableLocation={"uri": "bin/fp"})),
                           "$.runs[0].invocations[0].executableLocation.uri", ["without a uriBaseId"])

    # 3. Options

    def test_expect_results(self):
        self.assertProblem(valid_log(), "$.runs", ["3 results, expected 2"], expect_results=2)

    def test_exit_code(self):
        self.assertProblem(valid_log(), "$.runs[0].invocations[0].exitCode", ["1, expected 0"], exit_code=0)
        self.assertProblem(broken(lambda l: run0(l).pop("invocations")), "$.runs",
                           ["no invocation records an exitCode"], exit_code=0)

    def test_expect_rule_levels(self):
        self.assertProblem(valid_log(), "$.runs[0].results[0]", ["at level 'none', expected 'error'"],
                           expect_rule_levels={"online-softmax.normalizer-scan": "error"})
        # results[2] has no kind and no level: SARIF 3.27.10 makes it "warning", or the rule's default.
        self.assertProblem(valid_log(), "$.runs[0].results[2]", ["at level 'warning', expected 'error'"],
                           expect_rule_levels="online-softmax.value-pass-hoist=error")
        log = broken(lambda l: run0(l)["tool"]["driver"]["rules"][1].update(defaultConfiguration={"level": "error"}))
        self.assertEqual(check_sarif.problems(log, expect_rule_levels="online-softmax.value-pass-hoist=error"), [])
        self.assertProblem(valid_log(), "$.runs", ["no result of rule 'x'"], expect_rule_levels="x=none")
        with self.assertRaises(ValueError):
            check_sarif.parse_rule_levels("x=loud")

    # The command line

    def run_main(self, log, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "log.sarif")
            with open(path, "w", encoding="utf-8") as f:
                f.write(log if isinstance(log, str) else json.dumps(log))
            done = subprocess.run([sys.executable, os.path.join(HERE, "check_sarif.py"), path, *args],
                                  capture_output=True, text=True, timeout=120)
            return done.returncode, done.stderr.replace(path, "LOG")

    def test_main(self):
        self.assertEqual(self.run_main(valid_log(), "--expect-results", "3", "--exit-code", "1"), (0, ""))
        log = broken(lambda l: (l.update(version="2.0"), run0(l)["results"][0].update(level="note")))
        rc, err = self.run_main(log)
        self.assertEqual(rc, 1)
        lines = err.splitlines()
        self.assertEqual(len(lines), 2, err)
        self.assertTrue(all(line.startswith("LOG: $.") for line in lines), err)
        self.assertEqual(self.run_main(log, "--expect-rule-levels", "x=loud")[0], 2)
        rc, err = self.run_main("{not json")
        self.assertEqual(rc, 1)
        self.assertTrue(err.startswith("LOG: $: cannot read a JSON document"), err)
        rc, err = self.run_main(valid_log(), "--help")
        self.assertEqual(rc, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
