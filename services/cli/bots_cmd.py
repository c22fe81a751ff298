"""`plylog bot-eval`: play bots against each other or the random player, offline through the
fold (games.bots.arena: no services), and print a table or, with --json, one object."""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from games.bots import Budget, bot_ids, default_bot_id, make_bot
from games.bots.arena import IllegalBotAction, series
from games.bots.mastermind_arena import break_all
from games.core import Rejected
from games.mastermind import all_codes, random_code, space_size
from games.registry import GAME_MODULES, get_game
from services.cli._errors import CliError
from services.cli._options import parse_options

ENUMERATE_LIMIT = 50_000  # Mastermind spaces up to this are played secret by secret
DEFAULT_SAMPLE = 1_000
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def bot_eval(
    game: str = typer.Argument(..., metavar="GAME", help="mastermind, strands, mana or mind_ninja."),
    bot: str | None = typer.Option(
        None,
        "--bot",
        "-b",
        help="The bot to measure (default: the game's default level; Mastermind: the strongest strategy).",
    ),
    strategy: str | None = typer.Option(
        None,
        "--strategy",
        "-s",
        help="Mastermind: the codebreaker strategy (knuth, most-parts, entropy, expected-size, consistent).",
    ),
    vs: str = typer.Option("random", "--vs", help="The opponent bot (not Mastermind)."),
    games: int = typer.Option(
        100, "--games", "-n", min=1, help="Matches to play, the bot's seat alternating (not Mastermind)."
    ),
    seed: int = typer.Option(1, "--seed", help="Seed of every match (same seed and budget: same matches)."),
    playouts: int | None = typer.Option(None, "--playouts", min=1, help="Override the bot's playouts per move."),
    option: list[str] | None = typer.Option(
        None,
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="A game option (value as JSON), e.g. -o side=5 -o layout='\"small-5\"'.",
    ),
    pegs: int = typer.Option(4, "--pegs", help="Mastermind: code length (2-8)."),
    colours: int = typer.Option(6, "--colours", "--colors", help="Mastermind: number of colours (2-10)."),
    repeats: bool = typer.Option(True, "--repeats/--no-repeats", help="Mastermind: may a colour repeat."),
    max_distinct: int | None = typer.Option(
        None, "--max-distinct", help="Mastermind: at most this many colours in a code."
    ),
    sample: int | None = typer.Option(
        None,
        "--sample",
        min=1,
        help="Mastermind: play this many random secrets instead "
        f"of all (default: all up to {ENUMERATE_LIMIT:,} codes, "
        f"else {DEFAULT_SAMPLE:,}).",
    ),
    clock: str = typer.Option(
        "wall",
        "--clock",
        help="Time decisions by the wall clock, or by the process's CPU time "
        "(`cpu`: steadier on a machine shared with other work).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Measure a bot offline: every action goes through the rules worker's own fold.

    Mastermind: the codebreaker plays every secret of the variant once (round 1 of a match
    per secret) and the result is the mean and worst number of guesses:
    `plylog bot-eval mastermind --strategy knuth --pegs 4 --colours 6 --json`.

    Other games: `plylog bot-eval strands --bot mcts-2 --vs random --games 100 --seed 1 --json`
    gives wins, losses and draws from the bot's side (seats alternating) and the median
    seconds per move. Budgets are playouts, so the same seed gives the same matches.
    """
    if game not in GAME_MODULES:
        raise CliError(f"unknown game {game!r}", f"one of: {', '.join(GAME_MODULES)}")
    if clock not in CLOCKS:
        raise CliError(f"unknown clock {clock!r}", "--clock wall or --clock cpu")
    timer = CLOCKS[clock]
    console = Console(stderr=True, highlight=False)
    if game == "mastermind":
        options = {
            "pegs": pegs,
            "colors": colours,
            "repeats": repeats,
            "max_distinct": max_distinct,
            **parse_options(option),
        }
        _check_options(game, options)
        name = strategy or bot or default_bot_id(game)
        summary = _mastermind(_bot(name, game), options, sample, seed, console, timer)
    else:
        options = parse_options(option)
        _check_options(game, options)
        name = bot or strategy or default_bot_id(game)
        subject, opponent = _bot(name, game), _bot(vs, game)
        budget = Budget(playouts=playouts) if playouts else None
        summary = _matches(game, options, subject, opponent, games, seed, budget, console, timer)
    summary = {"game": game, "bot": name, **summary, "seed": seed, "clock": clock}
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        _print_table(summary)


def _bot(name: str, game: str):
    try:
        bot = make_bot(name)
    except KeyError:
        raise CliError(f"no bot {name!r}", f"bots for {game}: {', '.join(bot_ids(game))}") from None
    if game not in bot.games:
        raise CliError(f"bot {name!r} does not play {game}", f"bots for {game}: {', '.join(bot_ids(game))}")
    return bot


def _check_options(game: str, options: dict[str, Any]) -> None:
    try:
        get_game(game).normalise_options(options)
    except Rejected as rejection:
        raise CliError(f"invalid {game} options: {rejection.message}", "see docs/rules/ for the options") from None


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not sys.stderr.isatty(),
    )


def _mastermind(bot, options: dict[str, Any], sample: int | None, seed: int, console: Console, timer) -> dict[str, Any]:
    key = (options["pegs"], options["colors"], options["repeats"], options["max_distinct"])
    size = space_size(key)
    if sample is None and size <= ENUMERATE_LIMIT:
        secrets = list(all_codes(key))
    else:
        rng = random.Random(f"bot-eval-secrets|{seed}")
        secrets = [random_code(key, rng) for _ in range(min(sample or DEFAULT_SAMPLE, size))]
    started = time.perf_counter()
    with _progress(console) as progress:
        task = progress.add_task(f"{bot.id} on {len(secrets):,} secrets", total=len(secrets))
        tally = _run(
            lambda: break_all(bot, options, secrets, seed, timer, on_secret=lambda i, s, rows: progress.advance(task))
        )
    return {
        **tally.summary(),
        "secrets": "all" if len(secrets) == size else "sample",
        "space": size,
        "options": options,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _matches(
    game: str,
    options: dict[str, Any],
    bot,
    opponent,
    games: int,
    seed: int,
    budget: Budget | None,
    console: Console,
    timer,
) -> dict[str, Any]:
    started = time.perf_counter()
    with _progress(console) as progress:
        task = progress.add_task(f"{bot.id} vs {opponent.id}", total=games)
        tally = _run(
            lambda: series(
                game,
                options,
                bot,
                opponent,
                games,
                seed,
                budget,
                timer,
                on_match=lambda i, result, seat: progress.advance(task),
            )
        )
    return {
        "vs": opponent.id,
        **tally.summary(),
        "options": options,
        "playouts": budget.playouts if budget else getattr(bot, "playouts", {}).get(game),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _run(play):
    try:
        return play()
    except IllegalBotAction as error:
        raise CliError(f"a bot made an illegal move: {error}", "this is a bot bug; report it with the seed") from None


def _print_table(summary: dict[str, Any]) -> None:
    table = Table(title=f"bot-eval {summary['game']}: {summary['bot']}", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if key in ("game", "bot"):
            continue
        if isinstance(value, float):
            value = f"{value:.4f}"
        table.add_row(key, str(value))
    Console(highlight=False).print(table)


def register(app: typer.Typer) -> None:
    app.command("bot-eval")(bot_eval)
