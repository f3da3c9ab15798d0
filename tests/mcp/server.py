"""A small MCP server for agentd's MCP client tests, on the official MCP
Python SDK (`mcp` on PyPI, its `MCPServer`, formerly FastMCP).

    server.py stdio                  serve on stdin/stdout
    server.py http [--port N]        serve streamable HTTP on 127.0.0.1:N/mcp
                                     (N=0: a free port); prints "PORT <n>"

Its tools are what the tests need: a plain answer, structured output, an
error result, a slow call (counted too), a call that waits until the test
releases it (`POST /release`), one answering the `_meta` of its request (the
idempotency key agentd sends; `GET /metas` lists them all), a call that kills the server, a name too
long for a model's function-name limit, a write whose calls it counts
(`GET /calls` answers the counts as JSON: the tests of approvals), and one
that adds a tool and says the list changed. The tools that change nothing
say so (`readOnlyHint`). `POST /forget-sessions` makes it forget its
sessions (the tests of re-initialisation).
"""

import argparse
import asyncio
import json
import os
import socket
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

server = MCPServer("agentd-test-server")

READ_ONLY = ToolAnnotations(read_only_hint=True)

# Calls of the counted tools, by tool name.
CALLS: dict[str, int] = {}


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Returns the text it is given."""
    return f"echo: {text}"


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> dict:
    """Adds two numbers; the result is structured content."""
    return {"sum": a + b}


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Always fails with the given reason (an isError result)."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Answers after the given number of seconds; its calls are counted."""
    CALLS["slow"] = CALLS.get("slow", 0) + 1
    await asyncio.sleep(seconds)
    return "done"


# Set by `POST /release`: the calls of `hold` waiting on it answer.
RELEASED = asyncio.Event()


@server.tool(annotations=READ_ONLY)
async def hold() -> str:
    """Answers once the test releases it (`POST /release`); its calls are counted."""
    CALLS["hold"] = CALLS.get("hold", 0) + 1
    await RELEASED.wait()
    return "released"


@server.custom_route("/release", methods=["POST"])
async def release(_request: Request) -> PlainTextResponse:
    """Lets every waiting and later call of `hold` answer."""
    RELEASED.set()
    return PlainTextResponse("released")


@server.tool(annotations=READ_ONLY)
async def meta(ctx: Context, seconds: float = 0) -> str:
    """Answers the `_meta` of its request as JSON, after the given number of
    seconds; each call's `_meta` is kept (`GET /metas`)."""
    meta = dict(ctx.request_context.meta or {})
    METAS.append(meta)
    await asyncio.sleep(seconds)
    return json.dumps(meta, sort_keys=True)


# The `_meta` of each call of `meta`, in order (`GET /metas`).
METAS: list[dict] = []


@server.custom_route("/metas", methods=["GET"])
async def metas(_request: Request) -> JSONResponse:
    """The `_meta` of every call of `meta` so far, in order, even of calls
    that never answered."""
    return JSONResponse(METAS)


@server.tool()
def crash() -> str:
    """Ends the server's process in the middle of the call."""
    sys.stderr.write("crash: exiting on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def delete_everything() -> str:
    """A tool the tests deny."""
    return "everything deleted"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def write_note(text: str) -> str:
    """Writes a note (a call that changes something); its calls are counted."""
    CALLS["write_note"] = CALLS.get("write_note", 0) + 1
    return f"written: {text}"


def fresh(text: str) -> str:
    """A tool added while the server runs."""
    return f"fresh: {text}"


@server.tool(annotations=READ_ONLY)
async def add_fresh_tool(ctx: Context) -> str:
    """Adds the tool `fresh` and tells the client its tool list changed."""
    server.add_tool(fresh, name="fresh", annotations=READ_ONLY)
    await ctx.session.send_tool_list_changed()
    return "added fresh"


@server.custom_route("/calls", methods=["GET"])
async def calls(_request: Request) -> JSONResponse:
    """The calls of the counted tools so far, by tool name."""
    return JSONResponse(CALLS)


@server.tool(name="report_" + "x" * 70)
def long_named() -> str:
    """A tool whose name is longer than a model's function-name limit."""
    return "long"


@server.custom_route("/forget-sessions", methods=["POST"])
async def forget_sessions(_request: Request) -> PlainTextResponse:
    """Forgets every session, as a restarted server would: a client's next
    request on its session is answered 404."""
    server.session_manager._server_instances.clear()
    return PlainTextResponse("forgotten")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--stderr-banner", default="")
    p.add_argument("--exit-at-start", action="store_true")
    args = p.parse_args()
    if args.stderr_banner:
        sys.stderr.write(args.stderr_banner + "\n")
        sys.stderr.flush()
    if args.exit_at_start:
        sys.exit(2)
    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
