# lit configuration for flashproof's golden IR tests.
import os
import lit.formats

config.name = "flashproof"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".fp", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashproof_binary_dir, "tests", "lit-out")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
tool_dir = os.path.join(config.flashproof_binary_dir, "tools")
config.environment["PATH"] = os.pathsep.join(
    [tool_dir, config.lit_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%flashproof", os.path.join(tool_dir, "flashproof")))
# `script` (util-linux) gives a command a terminal: the colour tests need one.
import shutil
if shutil.which("script"):
    config.available_features.add("script")
# scripts/gpu-check's dry run (tests/lit/cli/gpu-check-dry-run.test) needs the sources and the unit tests.
config.substitutions.append(("%source_root", os.path.dirname(os.path.dirname(config.test_source_root))))
config.substitutions.append(("%unit_tests", os.path.join(config.flashproof_binary_dir, "tests", "unit_tests")))
