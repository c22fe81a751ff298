"""`python -m services.gateway [--host H] [--port P] [--log-level info]`: run the HTTP gateway.

Settings come from the environment (services/common/settings.py and services/gateway/config.py):
KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, PLYLOG_TOPIC_PREFIX, PLYLOG_GATEWAY_HOST/PORT, PLYLOG_SECRET,
PLYLOG_RATE_PER_S, PLYLOG_RATE_BURST, ... OpenAPI docs at http://HOST:PORT/docs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from services.common.event_loop import chosen_loop
from services.common.settings import SettingsError, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.gateway", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", help="address to bind (default PLYLOG_GATEWAY_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default PLYLOG_GATEWAY_PORT or 8000)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.WARNING)
    try:
        settings = load()
        loop = chosen_loop(os.environ)
        from .app import create_app
        from .config import GatewayConfig

        config = GatewayConfig.from_env(settings.home)
        app = create_app(settings, config)
    except SettingsError as error:
        print(f"plylog gateway: {error}", file=sys.stderr)
        return 2
    from .server import ConnectionLimits, run

    limits = ConnectionLimits(config.head_timeout_s, config.write_stall_s, config.socket_control_per_s)
    run(
        app,
        host=args.host or settings.gateway_host,
        port=args.port or settings.gateway_port,
        limits=limits,
        max_message_bytes=config.max_body_bytes,
        log_level=args.log_level,
        access_log=args.log_level == "debug",
        loop=loop,
        ws_per_message_deflate=config.socket_deflate,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
