"""Glicko-2 (Glickman, "Example of the Glicko-2 system", 2013), compact and pure.

plylog's rating period: every rated outcome is one rating period for its two players, each
rated against the other's rating as it was before the match. Nothing happens between
matches (no RD growth with idle time: that would need a clock, and the projection is derived
from records only). New players start at 1500 / RD 350 / volatility 0.06; tau = 0.5.
Floats are plain IEEE doubles, so the same outcomes in the same order give the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

SCALE = 173.7178
TAU = 0.5
EPSILON = 1e-6


@dataclass(frozen=True)
class Rating:
    rating: float = 1500.0
    rd: float = 350.0
    volatility: float = 0.06


NEW_PLAYER = Rating()


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expected(mu: float, mu_j: float, g_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-g_j * (mu - mu_j)))


def rate(player: Rating, games: Iterable[tuple[Rating, float]], tau: float = TAU) -> Rating:
    """The player's rating after one period with `games` = [(opponent before, score 1/0.5/0)]."""
    games = list(games)
    if not games:
        return player
    mu, phi, sigma = (player.rating - 1500.0) / SCALE, player.rd / SCALE, player.volatility
    v_inverse = 0.0
    delta_sum = 0.0
    for opponent, score in games:
        g_j = _g(opponent.rd / SCALE)
        e_j = _expected(mu, (opponent.rating - 1500.0) / SCALE, g_j)
        v_inverse += g_j * g_j * e_j * (1.0 - e_j)
        delta_sum += g_j * (score - e_j)
    v = 1.0 / v_inverse
    delta = v * delta_sum
    sigma_new = _new_volatility(phi, sigma, v, delta, tau)
    phi_star = math.sqrt(phi * phi + sigma_new * sigma_new)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * delta_sum
    return Rating(SCALE * mu_new + 1500.0, SCALE * phi_new, sigma_new)


def _new_volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    """Step 5 of the paper: the Illinois algorithm on f(x) = 0."""
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def rate_match(first: Rating, second: Rating, winner: int | None) -> tuple[Rating, Rating]:
    """Both players' ratings after one rated match (winner = seat 0, 1, or None for a draw)."""
    score = 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
    return rate(first, [(second, score)]), rate(second, [(first, 1.0 - score)])
