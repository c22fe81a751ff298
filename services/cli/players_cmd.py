"""`plylog players erase ID | name ID...`: a player's personal data (docs/personal-data.md). Erasure
goes through the gateway's operator-only endpoint, which deletes the player's key (a tombstone on
plylog.player-keys) and profile, and their notification endpoints; ratings and results stay."""

from __future__ import annotations

from urllib.parse import quote

import typer

from ._api import Api
from ._identity import operator_credential

players_app = typer.Typer(help="Players' personal data: show display names, erase a player.", no_args_is_help=True)


@players_app.command("erase")
def erase(player: str = typer.Argument(..., help="the player id, e.g. g~k3f9xq7m2pabcd4e")) -> None:
    """Erase a player's personal data (idempotent): their name then shows as erased everywhere;
    their id, ratings and results stay (the log is immutable)."""
    answer = Api().call("POST", f"/v1/players/{quote(player, safe='')}/erase", token=operator_credential().token)
    what = "erased" if answer["had_data"] else "nothing left to erase (erased before, or never had a profile)"
    typer.echo(f"{player}: {what}; shown as {answer['name'] or player!r}")
    typer.echo(
        "  the key is gone from Kafka's log once the topic is compacted (docs/personal-data.md, "
        '"How long a deleted key can survive")'
    )


@players_app.command("name")
def names(players: list[str] = typer.Argument(..., help="player ids")) -> None:
    """The display name each player shows as (their id when they have no profile)."""
    answer = Api().call("GET", "/v1/names", params=[("player", p) for p in players])
    for player in players:
        typer.echo(f"{player}\t{answer['names'].get(player) or player}")


def register(app: typer.Typer) -> None:
    app.add_typer(players_app, name="players")
