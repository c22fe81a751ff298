"""`plylog tournament create|register|withdraw|start|list|show|export|replay`: tournaments through
the gateway (create, enter, leave, look), and a whole tournament's log exported from
`plylog.tournaments` and folded again offline (docs/tournaments.md)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import typer

from games.tournaments import replay as fold_tournament
from services.cli._api import Api
from services.cli._clock import CLOCK_HELP, parse_clock
from services.cli._errors import CliError
from services.cli._identity import credential
from services.cli._options import parse_options
from services.common.kafka_read import read_topic
from services.common.settings import load
from services.common.tournament_store import is_tournament_id, view_of

app = typer.Typer(
    help="Tournaments: create, enter, withdraw, show standings, pairings and crosstable; export and replay.",
    no_args_is_help=True,
)


def _checked(tournament_id: str) -> str:
    if not is_tournament_id(tournament_id):
        raise typer.BadParameter("letters, digits, '_' and '-', at most 40")
    return tournament_id


def _call(method: str, path: str, **kwargs: Any) -> Any:
    api = Api()
    try:
        return api.call(method, path, credential().token if method != "GET" else None, **kwargs)
    finally:
        api.close()


@app.command()
def create(
    name: str = typer.Argument(..., help="The tournament's name."),
    format: str = typer.Option("swiss", "--format", "-f", help="swiss, round_robin, knockout or arena."),
    game: str = typer.Option("strands", "--game", "-g", help="mastermind, strands, mana or mind_ninja."),
    starts_in: int = typer.Option(300, "--starts-in", help="Seconds from now until it starts."),
    rounds: int | None = typer.Option(None, "--rounds", help="Swiss: the number of rounds."),
    duration: int | None = typer.Option(None, "--duration", help="Arena: its length in seconds (at least 60)."),
    clock: str | None = typer.Option(None, "--clock", help="Required, every match's clock. " + CLOCK_HELP),
    bots: bool = typer.Option(False, "--bots/--no-bots", help="May bots enter (the creator enters them)."),
    option: list[str] | None = typer.Option(None, "--option", "-o", metavar="KEY=VALUE", help="A game option."),
    rules: str | None = typer.Option(
        None, "--rules", help="Every match's rules version, e.g. strands/2 (default: the version in force)."
    ),
    tournament_id: str | None = typer.Option(None, "--id", help="The tournament id (default: a new one)."),
    setting: list[str] | None = typer.Option(
        None, "--set", metavar="KEY=VALUE", help="Any other setting, e.g. --set forfeit_wait_s=60 --set rated=false."
    ),
) -> None:
    """Create a tournament; prints its id."""
    starts = datetime.now(UTC) + timedelta(seconds=starts_in)
    body: dict[str, Any] = {
        "name": name,
        "format": format,
        "game": game,
        "starts_at": starts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "bots_allowed": bots,
        "options": parse_options(option or []),
        **parse_options(setting or []),
        **create_extras(rounds, duration, clock),
    }
    if tournament_id is not None:
        body["tournament_id"] = _checked(tournament_id)
    if rules is not None:
        body["rules"] = rules  # checked by the tournament rules (unknown_rules), as an API create's
    answer = _call("POST", "/v1/tournaments", json=body)
    typer.echo(answer["tournament_id"])


def create_extras(rounds: int | None, duration: int | None, clock: str | None) -> dict[str, Any]:
    """The create's optional fields given on the command line; `--clock` read as `plylog new` reads
    it (Fischer SECONDS[+INCREMENT] or correspondence DAYSd; junk is a CliError)."""
    extras: dict[str, Any] = {}
    if rounds is not None:
        extras["rounds"] = rounds
    if duration is not None:
        extras["duration_s"] = duration
    if clock is not None:
        extras["clock"] = parse_clock(clock)
    return extras


@app.command("register")
def register_cmd(
    tournament_id: str = typer.Argument(..., callback=_checked),
    player: str | None = typer.Option(None, "--player", "-p", help="Enter someone else (the creator: a bot:<id>~<n>)."),
) -> None:
    """Enter a tournament (yourself, or as its creator a bot)."""
    answer = _call("POST", f"/v1/tournaments/{tournament_id}/register", json={"player": player} if player else None)
    typer.echo(f"{answer['player']} entered {tournament_id}")


@app.command()
def withdraw(
    tournament_id: str = typer.Argument(..., callback=_checked),
    player: str | None = typer.Option(None, "--player", "-p", help="Withdraw someone else (the creator)."),
) -> None:
    """Leave a tournament: a pending pairing is lost, no more pairings."""
    answer = _call("POST", f"/v1/tournaments/{tournament_id}/withdraw", json={"player": player} if player else None)
    typer.echo(f"{answer['player']} withdrew from {tournament_id}")


@app.command()
def start(tournament_id: str = typer.Argument(..., callback=_checked)) -> None:
    """Start a tournament now (its creator)."""
    _call("POST", f"/v1/tournaments/{tournament_id}/start")
    typer.echo(f"{tournament_id} started")


@app.command("list")
def list_cmd(limit: int = typer.Option(20, "--limit", "-n")) -> None:
    """The latest tournaments."""
    for row in _call("GET", "/v1/tournaments", params={"limit": limit})["tournaments"]:
        typer.echo(
            f"{row['tournament_id']:<14} {row['status']:<8} {row['format']:<11} {row['game']:<10} "
            f"{row['players']:>3}/{row['max_players']:<3} {row['name']}"
        )


@app.command()
def show(
    tournament_id: str = typer.Argument(..., callback=_checked),
    as_json: bool = typer.Option(False, "--json", help="Print the whole view as JSON."),
) -> None:
    """Standings, the current round's pairings and the crosstable."""
    view = _call("GET", f"/v1/tournaments/{tournament_id}")
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    _print_view(view)


def _print_view(view: dict[str, Any]) -> None:
    s = view["settings"]
    typer.echo(f"{s['name']} ({view['tournament_id']}): {s['format']} of {s['game']}, {view['status']}")
    if view["winner"]:
        typer.echo(f"winner: {view['winner']}")
    typer.echo("standings:")
    for row in view["standings"]:
        extra = {k: v for k, v in row.items() if k not in ("rank", "player")}
        typer.echo(f"  {row['rank']:>3}. {row['player']:<24} {json.dumps(extra)}")
    if view["current"]:
        typer.echo(f"round {view['round']}:")
        for p in view["current"]:
            result = p["result"]
            said = "pending" if result is None else f"{result['how']}, winner seat {result['winner']}"
            typer.echo(f"  {p['match_id']:<24} {p['seats'][0]} v {p['seats'][1]}: {said}")


@app.command()
def export(
    tournament_id: str = typer.Argument(..., callback=_checked),
    out: Path | None = typer.Option(None, "--out", "-o", help="File to write (default: stdout)."),
) -> None:
    """A tournament's records from plylog.tournaments, one JSON line each (`plylog tournament replay` folds them)."""
    settings = load()
    try:
        records = read_topic(settings.kafka_bootstrap, settings.topics.tournaments, auth=settings.kafka_auth)
    except (LookupError, TimeoutError) as error:
        raise CliError(str(error), "is the stack up (`plylog up`)?") from None
    lines = [r.value for r in records if r.key == tournament_id.encode() and r.value is not None]
    if not lines:
        raise CliError(f"no records of tournament {tournament_id!r} on {settings.topics.tournaments}")
    data = b"".join(line + b"\n" for line in lines)
    if out is None:
        sys.stdout.buffer.write(data)
    else:
        out.write_bytes(data)
        typer.echo(f"{len(lines)} records of {tournament_id} -> {out}", err=True)


@app.command()
def replay(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A JSON Lines file from `tournament export`."),
    results: Path | None = typer.Option(None, "--results", help="Write one result record per line here."),
    as_json: bool = typer.Option(False, "--json", help="Print the final view as JSON."),
) -> None:
    """Fold an exported tournament with the service's own code: the same pairings and standings."""
    lines: list[bytes | str] = [line for line in file.read_bytes().splitlines() if line.strip()]
    state, answers = fold_tournament(lines)
    if results is not None:
        results.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in answers))
    if state is None:
        raise CliError(f"{file} creates no tournament")
    view = view_of(state)
    if as_json:
        typer.echo(json.dumps(view, indent=2))
    else:
        _print_view(view)
    rejected = sum(1 for a in answers if a["status"] == "rejected")
    typer.echo(f"{len(answers)} records: {len(answers) - rejected} accepted, {rejected} rejected", err=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tournament")
