"""`plylog rebuild`: empty the Redis projection and rebuild it from the topics."""

from __future__ import annotations

import logging
import os
import time

import typer

from services.cli._errors import CliError


def rebuild(
    check: bool = typer.Option(
        False,
        "--check",
        help="Change nothing: rebuild beside the projection up to its "
        "own stored offsets and compare the two (exit 1 if they differ).",
    ),
    consumer: str = typer.Option(
        "projector", help="Consumer name whose offsets the rebuild writes (the projector's --consumer)."
    ),
    batch: int = typer.Option(2000, min=1, help="Records per Redis transaction at most."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every batch."),
) -> None:
    """Empty the projection and rebuild it from the beginning of plylog.results and plylog.outcomes.

    Deletes every key under PLYLOG_REDIS_PREFIX (default "plylog:") of the projection, offsets
    included, in one atomic step (the gateway's rate limits stay), then applies every result and
    outcome up to the end of the topics as they are now, like the projector, without announcing
    on the live channels. The result is identical to what an uninterrupted projector builds.

    Refuses while a projector is connected to this Redis prefix: stop it first
    (`plylog down -c projector`), rebuild, then `plylog up` starts it again and it resumes
    where the rebuild stopped.

    With --check nothing is changed and a running projector is fine (best while it is idle):
    the topics are applied under a scratch prefix up to the offsets the projection has stored,
    the two projections are compared key by key, and the scratch keys are deleted.
    """
    import redis

    from services.common import redis_client
    from services.common.redis_keys import Keys, prefix_from_env
    from services.common.settings import load
    from services.projector.projection import Projection
    from services.projector.runner import ProjectionMoved, catch_up
    from services.projector.store import Store, client_name

    settings = load()
    keys = Keys(prefix_from_env(), _results_partitions(settings))
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("kafka").setLevel(logging.CRITICAL)  # its errors reach us as exceptions
    try:
        client = redis_client.connect(settings.redis, client_name=client_name("rebuild", keys.prefix, str(os.getpid())))
        client.ping()
    except redis.RedisError as error:
        raise CliError(
            f"Redis at {settings.redis_url} does not answer: {error}", "start the stack (`plylog up`) or set REDIS_URL"
        ) from None
    store = Store(client, keys, consumer, settings.topics.outcomes)
    if check:
        _check(store, consumer, settings, batch)
        return
    _refuse_if_busy(store, client_name("rebuild", keys.prefix, str(os.getpid())))
    started = time.perf_counter()
    deleted = store.wipe()
    try:
        totals = catch_up(Projection(store, settings.topics, publish=False), settings.kafka_bootstrap, batch=batch)
    except ProjectionMoved as error:
        raise CliError(
            str(error),
            "a projector started meanwhile and goes on from the stored offsets; "
            "to rebuild alone, stop it (`plylog down -c projector`) and run again",
        ) from None
    except (LookupError, TimeoutError) as error:
        raise CliError(
            f"reading the topics at {settings.kafka_bootstrap} failed: {error}",
            "is the broker up with the contract topics? (`plylog status`, `plylog up`)",
        ) from None
    took = time.perf_counter() - started
    c = totals.counts
    typer.echo(
        f"rebuilt the projection {keys.prefix!r} in {settings.redis_url} in {took:.1f} s: deleted {deleted} keys, "
        f"applied {c['result']} results ({c['applied']} changed a match) and {c['outcome']} outcomes "
        f"({c['rated']} rated) in {totals.batches} batches, {totals.records / took if took else 0:.0f} records/s"
        + (f"; {c['unreadable']} unreadable records skipped" if c["unreadable"] else "")
    )


def _check(store, consumer: str, settings, batch: int) -> None:
    """Rebuild under a scratch prefix up to the stored offsets and compare with the projection."""
    from services.common.redis_keys import Keys
    from services.projector.projection import Projection
    from services.projector.runner import catch_up
    from services.projector.store import Store, dump

    keys, client = store.keys, store.client
    scratch = Store(client, Keys(f"~plylog-check-{os.getpid()}:", keys.partitions), consumer, store.outcomes_topic)
    if scratch.keys.prefix.startswith(keys.prefix) or keys.prefix.startswith(scratch.keys.prefix):
        raise CliError(
            f"the prefix {keys.prefix!r} overlaps the scratch prefix {scratch.keys.prefix!r}",
            "check with another PLYLOG_REDIS_PREFIX",
        )
    stored = store.all_stored_offsets()
    started = time.perf_counter()
    try:
        scratch.wipe()
        totals = catch_up(
            Projection(scratch, settings.topics, publish=False), settings.kafka_bootstrap, batch=batch, until=stored
        )
        live, rebuilt = dump(client, keys), dump(client, scratch.keys)
        moved = store.all_stored_offsets() != stored
    finally:
        scratch.wipe()
    differing = sorted(k for k in live.keys() | rebuilt.keys() if live.get(k) != rebuilt.get(k))
    took = time.perf_counter() - started
    if moved:
        raise CliError(
            f"the projector moved on while checking ({len(differing)} keys differ, some maybe only because of that)",
            "check again while it is idle, or stop it (`plylog down -c projector`)",
        )
    if differing:
        shown = ", ".join(differing[:10]) + (" ..." if len(differing) > 10 else "")
        raise CliError(
            f"the projection {keys.prefix!r} differs from a rebuild in {len(differing)} of "
            f"{len(live.keys() | rebuilt.keys())} keys: {shown}",
            "run `plylog rebuild` (with the projector stopped) to replace it",
        )
    typer.echo(
        f"the projection {keys.prefix!r} equals a rebuild up to its stored offsets: {len(live)} keys, "
        f"{totals.records} records applied in {took:.1f} s"
    )


def _results_partitions(settings) -> int:
    """Partitions of the results topic (the projection has keys per partition)."""
    from services.common import kafka_admin

    try:
        count = kafka_admin.partition_counts(settings.kafka_bootstrap, [settings.topics.results], timeout=30)
    except Exception as error:  # noqa: BLE001 - whatever the client raises, the cause is shown
        raise CliError(
            f"cannot read topic metadata from {settings.kafka_bootstrap}: {error}",
            "is the broker up? (`plylog status`, `plylog up`)",
        ) from None
    found = count.get(settings.topics.results)
    if not found:
        raise CliError(
            f"topic {settings.topics.results} does not exist at {settings.kafka_bootstrap}",
            "`plylog up` creates the contract topics",
        )
    return found


def _refuse_if_busy(store, own_name: str) -> None:
    projectors = store.connected("projector")
    if projectors:
        raise CliError(
            f"a projector is connected to this projection ({', '.join(projectors)})",
            "stop it first: `plylog down -c projector` (then `plylog up` starts it again after the rebuild)",
        )
    others = [name for name in store.connected("rebuild") if name != own_name]
    if others:
        raise CliError(f"another rebuild is running on this projection ({', '.join(others)})", "wait for it to finish")


def register(app: typer.Typer) -> None:
    app.command("rebuild")(rebuild)
