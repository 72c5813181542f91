"""lit test format of tests/lit/verify/pairs (see lit.local.cfg there)."""
import os
import re
import subprocess

import lit.formats
import lit.Test


class VerifyPairs(lit.formats.base.TestFormat):
    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        source_path = testSuite.getSourcePath(path_in_suite)
        for name in sorted(os.listdir(source_path)):
            if name.endswith(".tgt.fp"):
                yield lit.Test.Test(testSuite, path_in_suite + (name,), localConfig)

    def execute(self, test, litConfig):
        tgt = test.getSourcePath()
        src = tgt[: -len(".tgt.fp")] + ".src.fp"
        text = open(tgt, encoding="utf-8").read()
        lines = [l.strip() for l in text.splitlines()]
        verify = "# VERIFY" in lines
        incorrect = "# VERIFY-INCORRECT" in lines
        claim = "exact"
        expects = []
        for l in lines:
            m = re.match(r'# CLAIM: (\S+)$', l)
            if m:
                claim = m.group(1)
            m = re.match(r'# EXPECT: "(.*)"$', l)
            if m:
                expects.append(m.group(1))
        if verify == incorrect and not expects:
            return lit.Test.UNRESOLVED, "the target needs VERIFY, VERIFY-INCORRECT or EXPECT"
        flashproof = os.path.join(test.config.flashproof_binary_dir, "tools", "flashproof")
        cex = test.getExecPath() + ".cex"
        os.makedirs(os.path.dirname(cex), exist_ok=True)
        cmd = [flashproof, "verify", "--src", src, "--tgt", tgt, "--claim", claim, "--no-cache", "--no-progress",
               "--case-dir", cex]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        out = p.stdout + p.stderr
        want = 0 if verify else 1 if incorrect else 2
        log = "$ " + " ".join(cmd) + "\n" + out
        if p.returncode != want:
            return lit.Test.FAIL, log + "\nexpected exit %d, got %d" % (want, p.returncode)
        for e in expects:
            if e not in out:
                return lit.Test.FAIL, log + "\nexpected the report to contain: " + e
        return lit.Test.PASS, log

