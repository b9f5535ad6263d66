"""core.launch.flag_value against argparse itself: the same answer for every argv argparse accepts, None
where argparse refuses the option's value."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from spectui.core.launch import flag_value, takes_as_value


def _parser() -> argparse.ArgumentParser:
    """Shaped like SGLang's ServerArgs.add_cli_args: long options only, aliases, a switch, a positional-free CLI."""
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--model-path", "--model", dest="model_path")
    p.add_argument("--api-key")
    p.add_argument("--port")
    p.add_argument("--speculative-num-steps")
    p.add_argument("--enable-metrics", action="store_true")
    return p


def _argparse_value(argv: list[str], dest: str) -> str | None | type[SystemExit]:
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            ns, _rest = _parser().parse_known_args(argv)
        except (SystemExit, argparse.ArgumentError):
            return SystemExit
    return getattr(ns, dest)


CASES = [
    (["--port", "30000"], ("--port",), "port"),
    (["--port=30000"], ("--port",), "port"),
    (["--port", "1", "--port", "2"], ("--port",), "port"),  # the last occurrence wins
    (["--port=1", "--port", "2", "--enable-metrics"], ("--port",), "port"),
    (["--api-key=--x"], ("--api-key",), "api_key"),  # a value starting -- only with =
    (["--api-key="], ("--api-key",), "api_key"),
    (["--api-key", ""], ("--api-key",), "api_key"),
    (["--speculative-num-steps", "-1"], ("--speculative-num-steps",), "speculative_num_steps"),
    (["--speculative-num-steps", "-0.5"], ("--speculative-num-steps",), "speculative_num_steps"),
    (["--api-key", "-"], ("--api-key",), "api_key"),
    (["--api-key", "--has space"], ("--api-key",), "api_key"),
    (["--model", "/a", "--model-path", "/b"], ("--model-path", "--model"), "model_path"),
    (["--model-path", "/b", "--model=/a"], ("--model-path", "--model"), "model_path"),
    (["--enable-metrics"], ("--port",), "port"),  # absent
    (["--api-key", "k", "--", "--api-key", "z"], ("--api-key",), "api_key"),
]


@pytest.mark.parametrize(("argv", "names", "dest"), CASES)
def test_flag_value_agrees_with_argparse(argv: list[str], names: tuple[str, ...], dest: str) -> None:
    expected = _argparse_value(argv, dest)
    assert expected is not SystemExit
    assert flag_value(argv, *names) == expected


@pytest.mark.parametrize("argv", [["--api-key", "--port", "1"], ["--port"], ["--port", "1", "--port", "-x"]])
def test_a_value_argparse_refuses_is_none(argv: list[str]) -> None:
    assert _argparse_value(argv, "port") is SystemExit or _argparse_value(argv, "api_key") is SystemExit
    name = "--api-key" if argv[0] == "--api-key" else "--port"
    assert flag_value(argv, name) is None


def test_takes_as_value_is_argparses_rule() -> None:
    assert takes_as_value("30000") and takes_as_value("-3") and takes_as_value("-") and takes_as_value("")
    assert not takes_as_value("--port") and not takes_as_value("-x") and not takes_as_value("-1e3")


def test_flag_value_needs_a_name() -> None:
    with pytest.raises(ValueError):
        flag_value(["--port", "1"])
