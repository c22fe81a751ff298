"""The projector: `plylog.results` and `plylog.outcomes` -> the Redis projection.

Modules, one job each:
  plan.py     pure: decoded records + what Redis holds -> Redis commands (views, logs, lists,
              deadlines, activity, standings, ratings, leaderboards, live announcements)
  glicko2.py  pure: the rating math
  store.py    Redis: read what planning needs, apply a batch fenced by the stored offsets (one
              Lua script), wipe, canonical dump
  projection.py  the partitions owned, at which stored offsets; `apply(poll)` plans and writes a
              poll's records with their offsets
  runner.py   Kafka: the consumer-group loop (the service) and `catch_up` (`plylog rebuild`)
The key layout is `services/common/redis_keys.py`; docs/projection.md explains it.
"""
