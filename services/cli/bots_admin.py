"""`plylog bots list | enable ID | disable ID`: the bots people can play against (announced by the
running bot services in Redis) and which an operator turned off."""

from __future__ import annotations

import asyncio

import typer

from services.common import bot_directory, redis_client
from services.common.redis_keys import Keys, prefix_from_env
from services.common.settings import load

from ._errors import CliError

bots_app = typer.Typer(help="The bots of this installation: list them, turn one off or on again.", no_args_is_help=True)


def _run(work):
    async def go():
        client = redis_client.connect_async(load().redis, socket_connect_timeout=5)
        try:
            return await work(client, Keys(prefix_from_env()))
        except OSError as error:
            raise CliError(
                f"Redis at {load().redis_url} does not answer: {error}", "is it up? (`plylog status`)"
            ) from None
        finally:
            await client.aclose()

    return asyncio.run(go())


@bots_app.command("list")
def list_bots() -> None:
    """Every bot a bot service announced: games, whether it plays now and is turned on."""
    entries = _run(bot_directory.entries)
    if not entries:
        typer.echo("no bots announced: is the bot service running? (`plylog up` starts it)")
        return
    for e in entries:
        state = "playable" if e.playable else ("off" if not e.enabled else "no service plays it now")
        typer.echo(f"bot:{e.bot_id:<16} {', '.join(e.games):<34} {state:<24} {e.description}")


def _toggle(bot_id: str, off: bool) -> None:
    bot_id = bot_id.removeprefix("bot:")

    async def work(client, keys):
        known = {e.bot_id for e in await bot_directory.entries(client, keys)}
        if bot_id not in known:
            raise CliError(f"no bot {bot_id!r} is announced", f"known: {', '.join(sorted(known)) or 'none'}")
        await (client.sadd if off else client.srem)(keys.bots_disabled, bot_id)

    _run(work)
    typer.echo(f"bot:{bot_id} {'turned off: new matches cannot seat it' if off else 'on again'}")


@bots_app.command("disable")
def disable(bot_id: str = typer.Argument(..., help="e.g. mcts-3 or bot:mcts-3")) -> None:
    """Turn a bot off: new matches cannot seat it (running ones go on)."""
    _toggle(bot_id, True)


@bots_app.command("enable")
def enable(bot_id: str = typer.Argument(..., help="e.g. mcts-3 or bot:mcts-3")) -> None:
    """Turn a bot on again."""
    _toggle(bot_id, False)


def register(app: typer.Typer) -> None:
    app.add_typer(bots_app, name="bots")
