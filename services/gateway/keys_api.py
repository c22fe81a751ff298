"""GET /v1/keys: the public keys that sign exported matches' receipts (issue 42, docs/verifying.md).

No auth (public keys), cacheable, bounded (a keyring holds at most MAX_KEYS keys). The keyring is
re-read when its file changes, so a `plylog keys rotate` shows here without a restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from services.common.receipt_keys import KEYRING_FILE, load_keyring

#: Seconds a client or cache may keep the answer: a rotated key shows within this.
KEYS_MAX_AGE_S = 300


def keys_router(home: Path) -> APIRouter:
    """`home`: the directory of the deployment's shared keyring (Settings.receipt_keys_dir)."""
    router = APIRouter(tags=["read"])
    cached: dict[str, Any] = {"stamp": None, "keys": []}

    def public_keys() -> list[dict[str, str]]:
        path = home / KEYRING_FILE
        stamp = path.stat().st_mtime_ns if path.exists() else None
        if stamp is None or stamp != cached["stamp"]:
            cached["keys"] = load_keyring(home).public_keys()  # made on first use, like the gateway secret
            cached["stamp"] = path.stat().st_mtime_ns
        return cached["keys"]

    @router.get("/v1/keys", summary="Public keys of the receipts' signatures (Ed25519; current and retired)")
    async def get_keys() -> Any:
        return JSONResponse({"keys": public_keys()}, headers={"Cache-Control": f"public, max-age={KEYS_MAX_AGE_S}"})

    return router
