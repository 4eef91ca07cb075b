"""``kafkawire metadata-shell``: kafka-metadata-shell over a snapshot or a metadata directory.

    kafkawire metadata-shell --snapshot FILE [COMMAND ...]
    kafkawire metadata-shell --directory __cluster_metadata-0 [COMMAND ...]

``--snapshot`` reads one file (snapshot, bootstrap.checkpoint or segment) as Kafka's shell does:
batch by batch, so /image/provenance is the last metadata batch's, in the file's own offsets.
``--directory`` replays the latest snapshot of a ``__cluster_metadata-0`` directory and the log
after it. With a COMMAND (ls, cat, tree, find) it runs it and exits; without one it reads
commands from standard input with Kafka's ``>> `` prompt (readline editing on a terminal), and
also knows cd, pwd, help, man, history and exit. The tree is described in
kafkawire/metadata/image_tree.py.

Anything the replay could not apply (an unknown record type or version, a record Kafka would
refuse, a corrupt or torn batch) is reported on stderr with its file, batch position and
offset, and the exit status is then 1; so it is when a one-shot command fails.
"""
from __future__ import annotations

import argparse
import shutil
import sys

COMMAND = "metadata-shell"
HELP = "browse the metadata image of a snapshot or log as a file tree, as kafka-metadata-shell does"
PROMPT = ">> "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", "-s", metavar="FILE",
                        help="a snapshot (.checkpoint, bootstrap.checkpoint) or a log segment (.log) to read")
    source.add_argument("--directory", "-d", metavar="DIR",
                        help="a __cluster_metadata-0 directory: its latest snapshot and the log after it")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="a command to run (ls, cat, tree, find) instead of the interactive shell")


# The java.nio exception Kafka's shell names when it cannot open --snapshot's file.
_JAVA_OPEN_ERRORS = {FileNotFoundError: "java.nio.file.NoSuchFileException",
                     PermissionError: "java.nio.file.AccessDeniedException"}


def unreadable_source(args) -> str | None:
    """The one line to print when the file or directory cannot be read at all: Kafka's shell
    fails before it shows anything (``Unexpected error: java.nio.file.NoSuchFileException: F``),
    so no tree is printed."""
    import os
    if args.directory is not None:
        if not os.path.isdir(args.directory):
            return f"Unexpected error: {args.directory}: not a directory (--directory wants a __cluster_metadata-0 " \
                   f"directory)"
        return None
    try:
        with open(args.snapshot, "rb"):
            return None
    except OSError as exc:
        java = _JAVA_OPEN_ERRORS.get(type(exc))
        if java is not None:
            return f"Unexpected error: {java}: {args.snapshot}"
        return f"Unexpected error: {args.snapshot}: {exc.strerror or exc}"


def load(args):
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.metadata.replay import replay_as_metadata_shell, replay_directory
    return replay_directory(args.directory) if args.directory else replay_as_metadata_shell(args.snapshot)


def report_problems(replay, err) -> None:
    for problem in replay.problems:
        print(f"Error: {problem}", file=err)
    err.flush()


def run(args: argparse.Namespace) -> int:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.metadata.image_tree import root_node
    from kafkawire.metadata.shell import Shell
    unreadable = unreadable_source(args)
    if unreadable is not None:
        print(unreadable, file=sys.stderr)
        return 1
    replay = load(args)
    report_problems(replay, sys.stderr)
    status = 1 if replay.problems else 0
    if args.command:
        shell = Shell(root_node(replay), interactive=False)
        result = shell.run(list(args.command))
        sys.stdout.write(result.output)
        sys.stdout.flush()
        return 1 if result.error else status
    interactive = sys.stdin.isatty()
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    shell = Shell(root_node(replay), interactive=True, screen_width=width)
    print("Loading...\nStarting...\n[ Kafka Metadata Shell ]", flush=True)
    if interactive:
        try:
            import readline  # noqa: F401 - line editing and history for input()
        except ImportError:
            pass
    while True:
        try:
            if interactive:
                line = input(PROMPT)
            else:
                sys.stdout.write(PROMPT)
                sys.stdout.flush()
                line = sys.stdin.readline()
                if not line:
                    raise EOFError
        except EOFError:
            sys.stdout.write("\n")   # end the prompt's line, as a shell does on ^D
            break
        except KeyboardInterrupt:
            print("^C")
            continue
        result = shell.run_line(line.rstrip("\n"))
        sys.stdout.write(result.output)
        sys.stdout.flush()
        if result.exit:
            break
    sys.stdout.flush()
    return status
