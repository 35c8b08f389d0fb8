"""Backend detection and flag injection on container command lines (podspec §2, §7.1)."""

from __future__ import annotations

import pytest

from dgd.domain.render.command_line import (
    DetectionError,
    detect_framework,
    inject_flags,
    is_python_command,
    quote_bash_c,
    quote_posix,
)


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        (["python3", "-m", "dynamo.vllm"], [], "vllm"),
        (["python3.12"], ["-m", "dynamo.sglang", "--tp", "2"], "sglang"),
        (["sh", "-c"], ["python3 -m dynamo.trtllm --x 1 && echo done"], "trtllm"),
        (["sh", "-c"], ["echo python3; -m dynamo.vllm"], None),
        (["dynamo-run"], ["vllm"], None),
    ],
)
def test_framework_is_detected_from_a_python_module_launch(
    command: list[str], args: list[str], expected: str | None
) -> None:
    # given a container command line, when the framework is detected, then it is the launched module's
    assert detect_framework({"command": command, "args": args}) == expected


def test_two_frameworks_on_one_command_line_are_a_detection_error() -> None:
    # given a shell line launching two frameworks, when detected, then it is refused naming both
    container = {"command": ["sh", "-c"], "args": ["python3 -m dynamo.vllm & python3 -m dynamo.sglang"]}
    with pytest.raises(DetectionError, match="vllm, sglang"):
        detect_framework(container)


@pytest.mark.parametrize(
    ("executable", "expected"),
    [("python", True), ("python3", True), ("/usr/bin/python3.11", True), ("pythonx", False), ("sh", False)],
)
def test_python_commands_are_recognised_by_name(executable: str, expected: bool) -> None:
    assert is_python_command(executable) is expected


def test_flags_are_appended_as_args_to_a_python_command_without_a_shell() -> None:
    # given a python command, when flags are injected without a shell, then they become separate args
    out = inject_flags(
        {"command": ["python3"], "args": ["-m", "x"]}, "--a 1 --b", needs_shell=False, framework="vllm"
    )
    assert out == {"command": ["python3"], "args": ["-m", "x", "--a", "1", "--b"]}


def test_flags_needing_a_shell_wrap_the_quoted_command_in_exec() -> None:
    # given an arg with spaces and JSON, when flags need a shell, then the line is quoted for sh -c
    container = {"command": ["python3", "-m", "dynamo.vllm"], "args": ['{"a": "$x"}']}
    out = inject_flags(container, "--rank $((I + 1))", needs_shell=True, framework="vllm")
    assert out == {
        "command": ["sh", "-c"],
        "args": ['exec python3 -m dynamo.vllm "{\\"a\\": \\"\\$x\\"}" --rank $((I + 1))'],
    }


def test_flags_go_after_the_last_framework_word_of_a_shell_line() -> None:
    # given a shell line with a pipeline after the launch
    container = {"command": ["sh", "-c"], "args": ["cd /w && python3 -m dynamo.sglang --model m | tee log"]}

    # when flags are injected
    out = inject_flags(container, "--nnodes 2", needs_shell=True, framework="sglang")

    # then they land right after the launch's last token containing the framework, before the pipe
    assert out["args"] == ["cd /w && python3 -m dynamo.sglang --nnodes 2 --model m | tee log"]


def test_shell_line_without_the_framework_is_left_alone() -> None:
    container = {"command": ["sh", "-c"], "args": ["./run.sh"]}
    assert inject_flags(container, "--x", needs_shell=True, framework="vllm") == container


@pytest.mark.parametrize(
    ("token", "bash_c", "posix"),
    [
        ("--model", "--model", "--model"),
        ("a b", '"a b"', "'a b'"),
        ("it's", '"it\'"\'"\'s"', "'it'\\''s'"),
        ("$HOME", '"\\$HOME"', "'$HOME'"),
    ],
)
def test_tokens_are_quoted_only_when_special(token: str, bash_c: str, posix: str) -> None:
    assert (quote_bash_c(token), quote_posix(token)) == (bash_c, posix)
