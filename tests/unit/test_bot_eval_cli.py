"""`plylog bot-eval` on tiny budgets: the JSON it prints, its determinism, its errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from services.cli._errors import CliError
from services.cli.main import app

runner = CliRunner()
TIMINGS = (
    "seconds",
    "seconds_per_move",
    "mean_seconds_per_move",
    "median_ms_per_move",
    "max_ms_per_move",
    "p95_ms_per_move",
    "p95_seconds_per_move",
)


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["bot-eval", *args, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def test_mastermind_plays_every_secret_once():
    summary = run_json("mastermind", "--strategy", "knuth", "--pegs", "2", "--colours", "4")
    assert summary["games"] == 16 and summary["secrets"] == "all" and summary["unsolved"] == 0
    histogram = {int(k): v for k, v in summary["histogram"].items()}
    assert sum(histogram.values()) == 16
    assert summary["total"] == sum(k * v for k, v in histogram.items())
    assert summary["mean"] == pytest.approx(summary["total"] / 16)
    assert summary["max"] == max(histogram) and 1 <= summary["mean"] <= summary["max"] <= 5
    assert summary["moves"] == summary["total"] and summary["median_ms_per_move"] >= 0


def test_mastermind_defaults_to_the_strongest_strategy_and_respects_the_variant():
    summary = run_json("mastermind", "--pegs", "3", "--colours", "4", "--no-repeats")
    assert summary["bot"] == "most-parts"
    assert summary["games"] == 24 and summary["space"] == 24  # 4·3·2 codes without repeats
    assert summary["options"]["repeats"] is False


def test_mastermind_samples_large_spaces():
    summary = run_json("mastermind", "--strategy", "consistent", "--pegs", "6", "--colours", "8", "--sample", "3")
    assert summary["games"] + summary["unsolved"] == 3 and summary["secrets"] == "sample"


def test_matches_against_random_are_counted_from_the_bots_side_and_repeatable():
    args = (
        "strands",
        "--bot",
        "mcts-1",
        "--vs",
        "random",
        "--games",
        "3",
        "--seed",
        "5",
        "--playouts",
        "4",
        "-o",
        "layout=small-4",
    )
    first, second = run_json(*args), run_json(*args)
    assert first["games"] == 3 and first["wins"] + first["losses"] + first["draws"] == 3
    assert first["win_rate"] == pytest.approx(first["wins"] / 3)
    assert first["seconds_per_move"] > 0 and first["vs"] == "random" and first["playouts"] == 4
    untimed = lambda s: {k: v for k, v in s.items() if k not in TIMINGS}  # noqa: E731 - a one-line helper
    assert untimed(first) == untimed(second)


def test_cpu_clock_times_the_moves_too():
    summary = run_json("mastermind", "--pegs", "2", "--colours", "3", "--clock", "cpu")
    assert summary["clock"] == "cpu" and summary["median_ms_per_move"] >= 0 and summary["games"] == 9


def test_the_default_bot_is_the_default_level():
    summary = run_json("mana", "--games", "1", "--playouts", "2", "-o", "max_plies=20")
    assert summary["bot"] == "mcts-2" and summary["games"] == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (["chess"], "unknown game"),
        (["mana", "--bot", "knuth"], "does not play mana"),
        (["mastermind", "--strategy", "psychic"], "no bot 'psychic'"),
        (["mana", "-o", "max_plies=-3"], "invalid mana options"),
        (["strands", "-o", "layout"], "is not KEY=VALUE"),
        (["mana", "--clock", "sundial"], "unknown clock"),
    ],
)
def test_errors_are_cli_errors(args, message):
    result = runner.invoke(app, ["bot-eval", *args])
    assert isinstance(result.exception, CliError), result.output
    assert message in result.exception.cause


def test_help_explains_both_forms():
    result = runner.invoke(app, ["bot-eval", "--help"])
    assert result.exit_code == 0
    assert "every secret" in result.output and "--vs" in result.output
