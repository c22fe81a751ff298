"""`plylog status`: each component of the local stack, running or not, and whether it answers."""

from __future__ import annotations

from rich.table import Table

from services.common.settings import Settings

from . import _redis, _redis_cluster
from ._console import out, rel, say
from ._services import SERVICES
from ._state import is_cluster_record, load_records, neg_instance, port_of, read_stack


def component_rows(s: Settings) -> list[dict]:
    from services.common import kafka_admin

    records = load_records(s)
    stack = read_stack(s.home) or {}
    cfg = stack.get("settings") or {}
    rows = []

    def row(name, rec, default_addr, check):
        if rec is not None and rec.alive():
            healthy = check(rec) if check else True
            state = "running" if healthy else "not answering"
            rows.append(
                {
                    "component": name,
                    "state": state,
                    "pid": rec.pid,
                    "address": rec.address,
                    "log": rec.log,
                    "ready_seconds": rec.ready_seconds,
                }
            )
        else:
            rows.append(
                {
                    "component": name,
                    "state": "stopped",
                    "pid": None,
                    "address": default_addr,
                    "log": rec.log if rec else "",
                    "ready_seconds": None,
                }
            )

    nodes = sorted((n for n in records if is_cluster_record(n)), key=lambda n: (n[0], -neg_instance(n)))
    if nodes:  # a cluster: every node, Redis nodes with their role
        for name in nodes:
            rec = records[name]
            if name.startswith("redis-"):
                node = _redis_cluster.RedisNode(-neg_instance(name), port_of(rec.address))
                row(name, rec, "", lambda r, n=node: _redis_cluster.ping(n))
                if rows[-1]["state"] == "running":
                    rows[-1]["address"] += {"master": " (primary)", "slave": " (replica)"}.get(
                        _redis_cluster.role(node), ""
                    )
            else:
                row(name, rec, "", lambda r: kafka_admin.metadata_answers(r.address, timeout=3) is not None)
    else:
        row(
            "redis",
            records.get("redis"),
            f"127.0.0.1:{cfg.get('redis_port', s.redis_port)}",
            lambda r: _redis.ping(port_of(r.address)),
        )
        row(
            "kafka",
            records.get("kafka"),
            f"127.0.0.1:{cfg.get('kafka_port', s.kafka_port)}",
            lambda r: kafka_admin.metadata_answers(r.address, timeout=3) is not None,
        )
    for spec in SERVICES:
        ok, why = spec.available()
        names = sorted((n for n in records if spec.owns(n)), key=lambda n: -neg_instance(n))
        if not names:
            port = spec.port(s, 1)
            rows.append(
                {
                    "component": spec.name,
                    "state": "stopped" if ok else "not written yet",
                    "pid": None,
                    "address": f"127.0.0.1:{port}" if port else "",
                    "log": "",
                    "ready_seconds": None,
                    "note": "" if ok else why,
                }
            )
        for n in names:
            row(n, records[n], "", None)
    return rows


def print_status(s: Settings, rows: list[dict]) -> None:
    stack = read_stack(s.home) or {}
    table = Table(title=f"plylog local stack — {rel(s.home)}/", title_justify="left")
    for col in ("component", "state", "pid", "address", "log"):
        table.add_column(col, no_wrap=col in ("component", "state", "pid", "address"))
    colors = {"running": "green", "stopped": "red", "not answering": "yellow"}
    for r in rows:
        color = colors.get(r["state"], "dim")
        table.add_row(
            r["component"],
            f"[{color}]{r['state']}[/{color}]",
            str(r["pid"] or "-"),
            r["address"] or "-",
            rel(r["log"]) if r["log"] else "-",
        )
    out.print(table)
    topics = stack.get("topics")
    if topics:
        say(f"topics: prefix {topics['prefix']!r}, {topics['partitions']} partitions (outcomes: 1)")
