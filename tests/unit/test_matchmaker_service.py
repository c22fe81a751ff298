"""The matchmaker service's pure parts: when a tick is worth its record, and the lobby's view."""

from __future__ import annotations

from games.matchmaking import Lobby, PoolEntry
from games.matchmaking.state import OpenSeek
from services.common.redis_keys import Keys
from services.matchmaker.service import lobby_view, next_change_ms, tick_due

DAY = 86_400_000


def _entry(joined_ms: int, bot_after_ms: int | None = None) -> PoolEntry:
    return PoolEntry(
        entry_id="p-" + "0" * 20,
        pool_id="strands/1d",
        player="ann",
        game="strands",
        options={},
        clock=None,
        rating=1500,
        joined_ms=joined_ms,
        expires_ms=joined_ms + DAY,
        bot="bot:mcts-1" if bot_after_ms is not None else None,
        bot_after_ms=bot_after_ms,
    )


def test_ticks_come_when_a_window_widens_and_stop_once_it_is_at_its_widest():
    lobby = Lobby(waiting=(_entry(0),), now_ms=3_000)
    assert next_change_ms(lobby) == 10_000
    assert not tick_due(lobby, 9_999) and tick_due(lobby, 10_000)
    widest = lobby.evolved(now_ms=140_000)  # 800 points: only the expiry is left to wait for
    assert next_change_ms(widest) == DAY and not tick_due(widest, 200_000)


def test_a_bots_wait_and_a_seeks_expiry_are_changes_too():
    waiting = Lobby(waiting=(_entry(0, bot_after_ms=145_000),), now_ms=141_000)
    assert next_change_ms(waiting) == 145_000
    seek = OpenSeek(
        seek_id="s-" + "1" * 20,
        player="ben",
        game="strands",
        options={},
        clock=None,
        rating=1500,
        rating_min=None,
        rating_max=None,
        seat=None,
        expires_ms=50_000,
    )
    assert next_change_ms(Lobby(seeks=(seek,), now_ms=1_000)) == 50_000
    assert next_change_ms(Lobby()) is None
    view = lobby_view(Lobby(seeks=(seek,), waiting=(_entry(0),), now_ms=1_000), 7)
    assert view["offset"] == 7 and view["seeks"][0]["seek_id"] == seek.seek_id
    assert view["pools"][0]["waiting"][0]["player"] == "ann" and view["pools"][0]["waiting_count"] == 1
    many = Lobby(seeks=tuple(seek.evolved(seek_id=f"s-{n:020x}") for n in range(600)))
    capped = lobby_view(many, 9)
    assert len(capped["seeks"]) == 500 and capped["seeks_count"] == 600  # each stream reads the view whole


def test_a_submissions_result_key_names_one_event_id_and_player():
    keys = Keys("p:", 1)
    assert keys.lobby_result("b:c", "a") != keys.lobby_result("c", "a:b")
