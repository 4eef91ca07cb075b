"""The `kafkawire` command line as a Kafka user expects it: usage errors exit 1 (Kafka's
CommandLineUtils.printUsageAndExit) with the usage of the command concerned, and --version
works on every command."""
import contextlib
import io

import pytest

from kafkawire.tools.cli import SUBCOMMANDS, build_parser, main, version_line


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def test_version_at_the_top_and_on_every_command():
    _, commands = build_parser()
    assert len(commands) == len(SUBCOMMANDS)
    for argv in [["--version"]] + [[name, "--version"] for name in commands]:
        status, out, err = run(*argv)
        assert (status, out.strip(), err) == (0, version_line(), ""), argv
    assert version_line().startswith("kafkawire 0.") and "Apache Kafka 4.3.1" in version_line()


@pytest.mark.parametrize("argv, usage", [
    (["dump-log", "--files", "x.log", "--no-such-flag"], "usage: kafkawire dump-log "),
    (["storage", "format", "--config", "c", "--cluster-id", "x", "--no-such-flag"], "usage: kafkawire storage format "),
    (["metadata-quorum", "--bootstrap-controller", "h:1", "describe", "--status", "--bogus"],
     "usage: kafkawire metadata-quorum"),
])
def test_a_flag_the_command_lacks_is_its_error_with_its_usage_and_exit_1(argv, usage):
    status, out, err = run(*argv)
    assert status == 1 and out == ""
    assert err.startswith(usage), err
    assert "unrecognized arguments:" in err and "usage: kafkawire [-h]" not in err


def test_missing_arguments_and_unknown_commands_exit_1():
    status, _, err = run("dump-log")
    assert status == 1 and "the following arguments are required: --files" in err
    status, _, err = run("no-such-tool")
    assert status == 1 and "invalid choice: 'no-such-tool'" in err


def test_each_command_is_listed_under_its_own_name():
    import importlib
    assert {name: importlib.import_module(module).COMMAND for name, module in SUBCOMMANDS.items()} == \
        {name: name for name in SUBCOMMANDS}


def test_a_command_line_imports_only_its_own_command():
    """`kafkawire server-start` imported every tool to build its parser, a good part of a
    combined node's start-up (benchmarks/broker_startup.py)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys; from kafkawire.tools import cli; cli.parse(['server-start', 'x.properties']); "
            "print(sorted(m for m in sys.modules if m.startswith(('kafkawire.tools', 'kafkawire.codegen'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))).stdout
    assert out.strip() == str(["kafkawire.tools", "kafkawire.tools.cli", "kafkawire.tools.server_start"])


def test_help_lists_every_command():
    status, out, _ = run("--help")
    assert status == 0 and all(name in out for name in SUBCOMMANDS)
