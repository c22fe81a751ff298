"""The matchmaker service: plylog.lobby -> matches on plylog.moves (docs/matchmaking.md)."""
