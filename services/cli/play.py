"""`plylog new | join | act | show | watch | play | leaderboard`: matches over the gateway's HTTP API."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import orjson
import typer

from games.clocks import DaysClock
from games.match import render
from games.public import PublicPosition

from ._api import Api
from ._clock import CLOCK_HELP, days_left_line, parse_clock
from ._errors import CliError
from ._identity import credential, save_identity
from ._ids import checked_match_id
from ._moves import help_for, parse
from ._options import parse_options


def _api() -> Api:
    return Api()


def _print_json(data: Any) -> None:
    typer.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def _now_ms() -> int:
    return int(time.time() * 1000)


def login(
    name: str = typer.Argument(..., help="Your name: letters, digits, '_', '.', '-' (up to 40)."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
) -> None:
    """Make a guest identity on the gateway (an opaque id, e.g. g~k3f9xq7m2pabcd4e; NAME is kept in
    its sealed profile) and keep its token in $PLYLOG_HOME/identity.json: `new`, `join` and
    `tokens` then act as it."""
    answer = _api().call("POST", "/v1/players", json={"name": name})
    path = save_identity(answer["player"], answer["token"])
    if as_json:
        _print_json(answer)
        return
    typer.echo(
        f"you are {answer['player']} (shown as {answer.get('name', name)}; token kept in {path}; "
        "others invite you by that id)"
    )


def whoami() -> None:
    """The player (or operator) the CLI acts as, and where its credential comes from."""
    cred = credential()
    answer = _api().call("GET", "/v1/whoami", token=cred.token)
    typer.echo(f"{answer['player']} ({answer['via']}, credential from {cred.source})")


def new(
    game: str = typer.Argument(..., help="mastermind, strands, mana or mind_ninja"),
    option: list[str] = typer.Option(
        [], "--option", "-o", help="A game option KEY=VALUE (JSON value or word); repeat."
    ),
    seat: list[str] = typer.Option(
        [],
        "--seat",
        "-s",
        help="Player of seat 0, then seat 1; `-` leaves a seat open, `me` is you. Another "
        "player's seat is reserved for them (they join it), unless you are the "
        "operator. Default: you vs an open seat.",
    ),
    vs: str | None = typer.Option(
        None,
        "--vs",
        help="Your opponent (you take seat 0): a player id, or a bot, e.g. bot:mcts-2 (`plylog bots list`).",
    ),
    clock: str | None = typer.Option(None, "--clock", help=CLOCK_HELP),
    vacation_days: int | None = typer.Option(
        None, "--vacation-days", help="Correspondence clocks: vacation days each player may take (default 7)."
    ),
    rated: bool = typer.Option(True, "--rated/--unrated", help="--unrated: the outcome moves no rating."),
    rules: str | None = typer.Option(
        None, "--rules", help="A rules version, e.g. strands/2 (default: the version in force; docs/evolving.md)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole answer as JSON."),
) -> None:
    """Create a match; prints its id and the seat tokens of your seats (keep them: they let you act)."""
    import getpass

    cred = credential()
    me = cred.player or (
        getpass.getuser() if cred.operator else _api().call("GET", "/v1/whoami", token=cred.token)["player"]
    )
    if vs is not None and seat:
        raise CliError("give --vs or --seat, not both", "--vs X is --seat me --seat X")
    seats: list[str | None] = [None if s == "-" else me if s == "me" else s for s in seat] or [me, vs]
    if len(seats) != 2:
        raise CliError(f"{len(seats)} --seat given; a match has 2 seats", "give --seat twice (`-` for an open seat)")
    body = {"game": game, "seats": seats, "options": parse_options(option)}
    parsed_clock = parse_clock(clock, vacation_days)
    if parsed_clock:
        body["clock"] = parsed_clock
    if not rated:
        body["rated"] = False
    if rules is not None:
        body["rules"] = rules
    answer = _api().call("POST", "/v1/matches", token=cred.token, json=body)
    if as_json:
        _print_json(answer)
        return
    if answer.get("status") == "pending":
        raise CliError(
            "the create was written but not answered in time",
            f"`plylog tokens {answer['match_id']}` gives your tokens once it is created",
        )
    match_id = answer["match_id"]
    typer.echo(f"match {match_id} ({game}) created")
    invited = answer.get("invited") or [None, None]
    for number, (player, token) in enumerate(zip(answer["seats"], answer.get("tokens", []), strict=False)):
        who = player or (
            f"reserved for {invited[number]} (they run `plylog join {match_id}`)"
            if invited[number]
            else f"open (`plylog join {match_id}`)"
        )
        typer.echo(f"  seat {number}: {who}" + (f"\n    token {token}" if token else ""))
    typer.echo(f"play: plylog play {match_id}   watch: plylog watch {match_id}")


def join(
    match: str = typer.Argument(..., help="The match id.", callback=checked_match_id),
    player: str | None = typer.Argument(None, help="Operator only: the player who joins."),
) -> None:
    """Take the open seat of a match (the one reserved for you, if any); prints your seat token."""
    cred = credential()
    body = {"player": player} if player else None
    answer = _api().call("POST", f"/v1/matches/{match}/join", token=cred.token, json=body)
    if answer.get("status") == "pending":
        raise CliError("the join was written but not answered in time", f"`plylog tokens {match}` gives it once done")
    typer.echo(f"{answer['player']} holds seat {answer['seat']} of {match}\n  token {answer['token']}")


def tokens(match: str = typer.Argument(..., help="The match id.", callback=checked_match_id)) -> None:
    """The seat tokens of your seats in a match (the operator: every seat's)."""
    answer = _api().call("GET", f"/v1/matches/{match}/tokens", token=credential().token)
    for number, (player, token) in enumerate(zip(answer["seats"], answer["tokens"], strict=False)):
        if token:
            typer.echo(f"seat {number} ({player}): {token}")


def _my_seat_tokens(match: str) -> list[str]:
    """The seat tokens of the seats the CLI's identity holds in `match` (`plylog login`)."""
    answer = _api().call("GET", f"/v1/matches/{match}/tokens", token=credential().token)
    mine = [token for token in answer["tokens"] if token]
    if not mine:
        raise CliError(f"you hold no seat of {match}", "join it (`plylog join`) or pass a seat token with --token")
    return mine


def act(
    match: str = typer.Argument(..., help="The match id.", callback=checked_match_id),
    action: str = typer.Argument(..., help='The action as JSON, e.g. \'{"type":"place","cells":[[1,0]]}\'.'),
    token: str | None = typer.Option(
        None,
        "--token",
        "-t",
        envvar="PLYLOG_TOKEN",
        help="Your seat token (default: your seat's, after `plylog login`).",
    ),
    expected_seq: int | None = typer.Option(None, "--expected-seq", help="Reject unless the match is at this seq."),
    no_wait: bool = typer.Option(False, "--no-wait", help="Do not wait for the result."),
) -> None:
    """Submit one action for your seat and print its result."""
    try:
        parsed = orjson.loads(action)
    except orjson.JSONDecodeError as error:
        raise CliError(f"ACTION is not JSON: {error}", 'quote it: \'{"type": "resign"}\'') from None
    body = {"action": parsed, **({"expected_seq": expected_seq} if expected_seq is not None else {})}
    if token is None:
        mine = _my_seat_tokens(match)
        if len(mine) > 1:
            raise CliError(f"you hold both seats of {match}", "say which with --token (`plylog tokens` lists them)")
        token = mine[0]
    answer = _api().call(
        "POST", f"/v1/matches/{match}/actions", token=token, json=body, params={"wait": str(not no_wait).lower()}
    )
    _print_json(answer)
    if answer.get("status") == "rejected":
        raise typer.Exit(1)


def show(
    match: str = typer.Argument(..., help="The match id.", callback=checked_match_id),
    at: int | None = typer.Option(None, "--at", help="Show the position at this seq (time travel)."),
    as_json: bool = typer.Option(False, "--json", help="Print the public view as JSON instead."),
) -> None:
    """Draw a match as it is now, or as it was at --at SEQ."""
    api = _api()
    if as_json:
        _print_json(api.call("GET", f"/v1/matches/{match}" + (f"/positions/{at}" if at is not None else "")))
        return
    entries = api.call("GET", f"/v1/matches/{match}/events")["results"]
    if at is not None and not 1 <= at <= len(entries):
        raise CliError(f"{match} has positions 1..{len(entries)}, not {at}")
    state = PublicPosition.from_log(entries, at).state
    typer.echo(render(state))
    if at is None and isinstance(state.clock, DaysClock):
        typer.echo(days_left_line(api.call("GET", f"/v1/matches/{match}"), _now_ms()))


def watch(
    match: str = typer.Argument(..., help="The match id.", callback=checked_match_id),
    since: int = typer.Option(0, "--since", help="Start after this seq (0: from the beginning)."),
) -> None:
    """Follow a match live, drawing each new position, until it ends (Ctrl-C to stop)."""
    position = PublicPosition()
    for event, data in _api().stream(match, since):
        if event == "rejected":
            typer.echo(f"  (rejected {data.get('player')}: {data['reason']['message']})")
        elif event == "result" and position.apply(data):
            typer.echo(render(position.state) + "\n")
            if position.state.status == "over":
                return


def play(
    match: str = typer.Argument(..., help="The match id.", callback=checked_match_id),
    token: list[str] = typer.Option(
        [],
        "--token",
        "-t",
        envvar="PLYLOG_TOKEN",
        help="Your seat token (twice for hot-seat play). Default: your seats' tokens, after `plylog login`.",
    ),
) -> None:
    """Play in the terminal: draws the board, asks for your move when it is your turn (short syntax
    per game, shown at the prompt), and follows your opponent live."""
    api = _api()
    token = token or _my_seat_tokens(match)
    seats = {int(t.split(".")[1]): t for t in token if t.count(".") == 2 and t.split(".")[1] in ("0", "1")}
    if not seats:
        raise CliError(
            "no usable --token (a token looks like MATCH.SEAT.SIGNATURE)", "use the token `plylog new` printed"
        )
    results: queue.Queue[tuple[str, dict]] = queue.Queue()
    threading.Thread(target=lambda: [results.put(item) for item in api.stream(match)], daemon=True).start()
    session = _PlaySession(api, match, seats)
    session.run(results)


class _PlaySession:
    def __init__(self, api: Api, match: str, seats: dict[int, str]):
        self.api, self.match, self.seats = api, match, seats
        self.position = PublicPosition()
        self.view: dict[str, Any] = {}
        self.helped_at = -1

    def run(self, results: queue.Queue[tuple[str, dict]]) -> None:
        shown = -1
        while True:
            self._drain(results, block=self.position.state is None or not self._my_turn())
            state = self.position.state
            if state is None:
                continue
            if self.position.seq != shown:
                typer.echo("\n" + render(state))
                line = days_left_line(self.view, _now_ms())
                if line:
                    typer.echo(line)
                shown = self.position.seq
            if state.status == "over":
                return
            if self._my_turn():
                self._ask()
            else:
                typer.echo(
                    f"  waiting for the opponent ({', '.join(state.seats[s] or '?' for s in state.to_move())}) ..."
                )
                self._drain(results, block=True)

    def _my_turn(self) -> bool:
        state = self.position.state
        return state is not None and any(seat in self.seats for seat in state.to_move())

    def _drain(self, results: queue.Queue[tuple[str, dict]], block: bool) -> None:
        try:
            item = results.get(timeout=None if block else 0.05)
            while True:
                event, data = item
                if event == "result" and self.position.apply(data):
                    self.view = data.get("view") or self.view
                item = results.get_nowait()
        except queue.Empty:
            return

    def _ask(self) -> None:
        state = self.position.state
        seat = next(s for s in state.to_move() if s in self.seats)
        prompt = f"{state.seats[seat]} (seat {seat}) > "
        if self.helped_at != self.position.seq:
            typer.echo(f"  your move — {help_for(state.game)}")
            self.helped_at = self.position.seq
        try:
            line = input(prompt)
        except EOFError:
            raise typer.Exit(0) from None
        try:
            action = parse(state.game, line, {**self.view, "match_id": self.match})
        except ValueError as error:
            typer.echo(f"  ! {error}")
            return
        try:
            answer = self.api.call(
                "POST",
                f"/v1/matches/{self.match}/actions",
                token=self.seats[seat],
                json={"action": action},
                params={"wait": "true"},
            )
        except CliError as error:
            typer.echo(f"  ! {error.cause}" + (f" ({error.hint})" if error.hint else ""))
            return
        if answer.get("status") == "rejected":
            typer.echo(f"  ! rejected ({answer['reason']['code']}): {answer['reason']['message']}")
        elif answer.get("status") == "accepted":
            self.position.apply(answer)
            self.view = answer.get("view") or self.view


def leaderboard(
    game: str = typer.Argument(..., help="mastermind, strands, mana or mind_ninja"),
    by: str = typer.Option("rating", "--by", help="rating, wins or played"),
    limit: int = typer.Option(20, "--limit", "-n", help="How many players."),
) -> None:
    """The top players of a game."""
    answer = _api().call("GET", f"/v1/leaderboards/{game}", params={"by": by, "limit": limit})
    if not answer["entries"]:
        typer.echo(f"no rated {game} matches yet")
        return
    typer.echo(f"{game}, by {by}:")
    for entry in answer["entries"]:
        value = entry[by]
        typer.echo(
            f"  {entry['rank']:>3}. {entry['player']:<24} {value:.1f}"
            if isinstance(value, float)
            else f"  {entry['rank']:>3}. {entry['player']:<24} {value}"
        )


def register(app: typer.Typer) -> None:
    for command in (login, whoami, new, join, tokens, act, show, watch, play, leaderboard):
        app.command(command.__name__)(command)
