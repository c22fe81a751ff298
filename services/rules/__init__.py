"""The rules worker: folds plylog.moves into match states and emits results (Faust)."""
