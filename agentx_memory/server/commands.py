"""The CLI's ``serve`` and ``keys`` subcommands (registered in :data:`agentx_memory.cli.COMMANDS`).

Nothing heavy is imported here at module level: building the CLI's parser must load none of the engine (and not
FastAPI); each handler imports what it runs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..memory import AsyncAgentMemory
    from ..settings import Settings

__all__ = ["cmd_keys", "cmd_serve", "keys_args", "serve_args"]

T = TypeVar("T")


def serve_args(p: argparse.ArgumentParser) -> None:
    """``serve [--host H] [--port P]``."""
    p.add_argument("--host", default=None, help="address to listen on (default: server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="TCP port (default: server.port, 8077)")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                   help="uvicorn's log level (default info)")


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the REST service under uvicorn until SIGINT/SIGTERM: then stop taking requests, let those in flight
    finish (at most ``server.shutdown_timeout_seconds``) and close the memory."""
    from ..errors import ConfigurationError

    try:
        import uvicorn
    except ImportError as exc:
        raise ConfigurationError('`serve` needs the [server] extra: pip install "agentx-memory[server]"') from exc
    from .app import create_app

    overrides: dict[str, Any] = {}
    if args.host is not None:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    if overrides:
        settings = settings.model_copy(update={"server": settings.server.model_copy(update=overrides)})
        settings.server.model_validate(settings.server.model_dump())  # a bad --port fails like a bad setting
    server = settings.server
    config = uvicorn.Config(create_app(settings), host=server.host, port=server.port, log_level=args.log_level,
                            timeout_graceful_shutdown=server.shutdown_timeout_seconds, proxy_headers=False)
    uvicorn.Server(config).run()
    return 0


def keys_args(p: argparse.ArgumentParser) -> None:
    """``keys create|list|revoke``."""
    sub = p.add_subparsers(dest="keys_action", required=True)
    create = sub.add_parser("create", help="make a key for a user (prints the key once)")
    create.add_argument("--user", required=True, help="the user every request with the key acts for")
    create.add_argument("--agent", default=None, help="act as this agent of the user (default: the user)")
    create.add_argument("--channel", action="append", default=[], dest="channels",
                        help="allow only this channel (repeatable; default: every channel)")
    create.add_argument("--name", default="", help="a label for people")
    create.add_argument("--json", action="store_true", help="print the key and its record as JSON")
    listing = sub.add_parser("list", help="the keys (never their tokens)")
    listing.add_argument("--user", default=None, help="only this user's keys")
    listing.add_argument("--all", action="store_true", help="revoked keys too")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = sub.add_parser("revoke", help="refuse a key from now on")
    revoke.add_argument("key_id", help="the key's id (keys list)")


def _with_memory(settings: Settings, work: Callable[[AsyncAgentMemory], Awaitable[T]]) -> T:
    import asyncio

    from ..memory import AsyncAgentMemory

    async def go() -> T:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await work(memory)

    return asyncio.run(go())


def cmd_keys(args: argparse.Namespace, settings: Settings) -> int:
    """Make, list or revoke API keys of the REST service (docs/server.md)."""
    if args.keys_action == "create":
        made = _with_memory(settings, lambda m: m.create_api_key(args.user, agent_id=args.agent,
                                                                 channels=args.channels, name=args.name))
        if args.json:
            print(json.dumps({"token": made.token, **made.key.model_dump(mode="json")}, indent=2))
        else:
            scope = (f" as agent {made.key.agent_id}" if made.key.agent_id else "") + (
                f" in channels {', '.join(made.key.channels)}" if made.key.channels else "")
            print(f"key {made.key.key_id} for user {made.key.user_id}{scope}. The key (shown once, keep it "
                  "secret):")
            print(made.token)
        return 0
    if args.keys_action == "list":
        keys = _with_memory(settings, lambda m: m.list_api_keys(args.user, include_revoked=args.all))
        if args.json:
            print(json.dumps([k.model_dump(mode="json") for k in keys], indent=2))
            return 0
        for k in keys:
            state = f"revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "live"
            print(f"{k.key_id}  user={k.user_id}  agent={k.agent_id or '-'}  channels={','.join(k.channels) or '*'}"
                  f"  created={k.created_at:%Y-%m-%d %H:%M}  {state}  {k.name}")
        if not keys:
            print("no keys")
        return 0
    revoked = _with_memory(settings, lambda m: m.revoke_api_key(args.key_id))
    print(f"key {args.key_id} revoked" if revoked else f"key {args.key_id}: no live key with that id")
    return 0 if revoked else 1
