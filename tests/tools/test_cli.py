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
