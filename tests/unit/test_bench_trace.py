"""`python -m bench.trace` lines up the stage marks of the last traced run only: a warm-up or an
earlier run sends the same load (the same event ids) and its marks must not be taken for this run's."""

from __future__ import annotations

import orjson

from bench.trace import load


def test_marks_from_before_the_runs_first_send_are_left_out(tmp_path):
    bench = {"sent": {"e1": 100.0, "e2": 100.5}, "at": {"views": {"e1": 100.03, "e2": 100.52}}, "after": 100.0}
    (tmp_path / "bench-latency.json").write_bytes(orjson.dumps(bench))
    warm_up = [{"stage": "fetched", "t": 40.0, "ids": ["e1", "e2"]}]  # the same ids, a minute before
    this_run = [{"stage": "fetched", "t": 100.01, "ids": ["e1"]}, {"stage": "fetched", "t": 100.51, "ids": ["e2"]}]
    (tmp_path / "rules-1.jsonl").write_bytes(b"\n".join(orjson.dumps(e) for e in warm_up))
    (tmp_path / "rules-2.jsonl").write_bytes(b"\n".join(orjson.dumps(e) for e in this_run) + b"\n{cut sho")
    times, after = load(tmp_path, "latency")
    assert times["fetched"] == {"e1": 100.01, "e2": 100.51} and after == 100.0
    assert times["views"] == bench["at"]["views"]
