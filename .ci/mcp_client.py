"""An MCP client no one here wrote (the `mcp` package from PyPI) against the support_desk example.

usage: python .ci/mcp_client.py PATH-TO-support_desk [HTTP-URL TOKEN]

Runs the same checks over stdio in both protocol modes, `legacy` (the initialize handshake) and
`2026-07-28`, and, given the URL of a support_desk serving HTTP with a bearer token, over HTTP too
(where a request without the token must be refused). Then, in both modes, a refund left in doubt
(`--fault lost-refund`, its log in a file) is settled by a person with `tool-contract settle` (the
command in `target/debug`, or `$TOOL_CONTRACT_BIN`) while the server holds the log, and the next call
answers from the settlement: one refund at the desk. Then the person at the client, played by a
scripted elicitation callback in both modes: approving a second refund attempt (`--fault
busy-refund`) with the right confirm, declining, cancelling, accepting the defaults, a wrong confirm,
garbage, no callback at all; in 2026-07-28, a replayed and a tampered request state, a no resent as a
yes, and over HTTP another client's answer to a question; and settling a lost refund on the next call. The desk counts refunds: never more than one per order, exactly one
after an approval. Prints one line per check, then `N passed, N failed`. Exits 1 on any failure.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import traceback

import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

TASK = "dev.tool-contract/task"
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + str(detail)}")


def field(obj, *names):
    """The first of `names` the object has (the SDK's models use snake_case, the wire camelCase)."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def report_of(result):
    structured = field(result, "structured_content", "structuredContent")
    return structured if structured is not None else json.loads(result.content[0].text)


async def run(server, mode):
    async with Client(server, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = ["delete_notice", "list_notices", "list_refunds", "post_notice", "refund"]
        check(f"{mode}: five tools", sorted(tools) == expected, sorted(tools))
        hints = {name: field(tool, "annotations") for name, tool in tools.items()}
        read_only = {name: field(h, "read_only_hint", "readOnlyHint") for name, h in hints.items()}
        destructive = {name: field(h, "destructive_hint", "destructiveHint") for name, h in hints.items()}
        idempotent = field(hints["post_notice"], "idempotent_hint", "idempotentHint")
        check(f"{mode}: list_notices is read-only", read_only["list_notices"] is True, read_only)
        check(f"{mode}: post_notice is not read-only, not idempotent", read_only["post_notice"] is False and idempotent is False, hints["post_notice"])
        check(f"{mode}: delete_notice is destructive", destructive["delete_notice"] is True, hints["delete_notice"])
        post = tools["post_notice"]
        check(f"{mode}: descriptions from doc comments", (post.description or "").startswith("Post a notice"), post.description)
        schema = field(post, "input_schema", "inputSchema")
        check(f"{mode}: input schema", schema.get("required") == ["thread", "text"] and schema.get("additionalProperties") is False, schema)
        output = field(post, "output_schema", "outputSchema")
        check(f"{mode}: output schema is the report", output and "outcome" in output.get("properties", {}), output)

        thread = f"thread-{mode}-{id(server)}"
        meta = {TASK: f"ticket-{mode}-{id(server)}"}
        first = await client.call_tool("post_notice", {"thread": thread, "text": "Your refund was sent."}, meta=meta)
        first_report = report_of(first)
        check(f"{mode}: post_notice ok", first_report["outcome"] == "ok" and first_report["effect_applied"] == "yes", first_report)
        check(f"{mode}: isError false on ok", field(first, "is_error", "isError") is False, first)
        result_meta = field(first, "meta", "_meta") or {}
        check(f"{mode}: intent key in result _meta", result_meta.get("dev.tool-contract/intent_key") == first_report["idempotency_key"], result_meta)

        again = await client.call_tool("post_notice", {"thread": thread, "text": "Your refund was sent."}, meta=meta)
        check(f"{mode}: the re-sent call reports the same notice", report_of(again).get("value") == first_report["value"], report_of(again))
        listed = report_of(await client.call_tool("list_notices", {"thread": thread}, meta=meta))
        check(f"{mode}: one notice after two sends", listed["outcome"] == "ok" and len(listed["value"]) == 1, listed)

        bad = await client.call_tool("post_notice", {"thread": 9}, meta=meta)
        bad_report = report_of(bad)
        check(f"{mode}: bad arguments: isError", field(bad, "is_error", "isError") is True, bad)
        check(f"{mode}: bad arguments: permanent, nothing applied", bad_report["outcome"] == "permanent" and bad_report["effect_applied"] == "no", bad_report)
        check(f"{mode}: bad arguments: the field named", "`thread`" in bad_report["message"], bad_report["message"])

        notice = first_report["value"]["id"]
        deleted = report_of(await client.call_tool("delete_notice", {"thread": thread, "notice": notice}, meta=meta))
        check(f"{mode}: delete_notice ok", deleted["outcome"] == "ok" and deleted["value"] == notice, deleted)

        try:
            unknown = await client.call_tool("no_such_tool", {}, meta=meta)
            check(f"{mode}: an unknown tool is an error", field(unknown, "is_error", "isError") is True, unknown)
        except Exception as error:  # the protocol error, raised by the client
            check(f"{mode}: an unknown tool is an error", "no_such_tool" in str(error), error)


async def lost_refund(binary, mode):
    """A refund whose reply is lost and whose probe fails, settled by a person while the server runs."""
    settle_bin = os.environ.get("TOOL_CONTRACT_BIN", "target/debug/tool-contract")
    with tempfile.TemporaryDirectory() as scratch:
        log = os.path.join(scratch, "attempts.log")
        args = ["--budget-s", "20", "--log", log, "--fault", "lost-refund"]
        async with Client(StdioServerParameters(command=binary, args=args), mode=mode) as client:
            meta = {TASK: f"refund-{mode}"}
            order = {"order": "ord-7741", "cents": 1299}
            first = report_of(await client.call_tool("refund", order, meta=meta))
            check(f"{mode}: a lost refund is unknown", first["outcome"] == "unknown" and first["effect_applied"] == "unknown", first)
            settled = subprocess.run(
                [settle_bin, "settle", log, "--intent", first["idempotency_key"], "--attempt", first["attempt_id"], "--landed", "--value", json.dumps(order),
                 "--evidence", "refund of 12.99 on the card statement", "--by", "ci-operator"],
                capture_output=True, text=True, timeout=60)
            check(f"{mode}: settled while the server holds the log", settled.returncode == 0, settled.stderr)
            again = report_of(await client.call_tool("refund", order, meta=meta))
            check(f"{mode}: the next call answers from the settlement", again["outcome"] == "ok" and again["effect_applied"] == "yes"
                  and again.get("value") == order and "settled landed by ci-operator" in again["message"], again)
            listed = report_of(await client.call_tool("list_refunds", {"order": "ord-7741"}, meta=meta))
            check(f"{mode}: one refund at the desk", listed["outcome"] == "ok" and len(listed["value"]) == 1, listed)
            twice = subprocess.run(
                [settle_bin, "settle", log, "--intent", first["idempotency_key"], "--attempt", first["attempt_id"], "--not-landed",
                 "--evidence", "second look", "--by", "someone-else", "--seen", "now"], capture_output=True, text=True, timeout=60)
            check(f"{mode}: a second settlement is refused, naming the first", twice.returncode == 1 and "ci-operator" in twice.stderr, twice.stderr)


def person(answer, asked):
    """An elicitation callback playing the person: `answer` says what they do with each form."""
    async def on_elicit(ctx, params):
        message = params.message
        asked.append(message)
        end = message.split("confirm code ")[1][:6] if "confirm code " in message else ""
        if answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True, "confirm": end})
        if answer == "wrong-confirm":
            return types.ElicitResult(action="accept", content={"approve": True, "confirm": "abcdef"})
        if answer == "defaults":
            return types.ElicitResult(action="accept", content={"approve": True})
        if answer == "garbage":
            return types.ElicitResult(action="accept", content={"approve": "yes", "confirm": 42})
        if answer in ("decline", "cancel"):
            return types.ElicitResult(action=answer)
        if answer == "landed":
            return types.ElicitResult(action="accept", content={"verdict": "landed", "evidence": "refund 12.99 on the statement"})
        raise RuntimeError(f"no script for {answer}")
    return on_elicit


async def approvals(binary, mode):
    """A refund's first attempt refused (busy): the second needs the person's typed yes."""
    cases = [("approve", "ok", None, 1), ("decline", "permanent", "declined", 0), ("cancel", "permanent", "cancelled", 0),
             ("defaults", "permanent", "not typed", 0), ("wrong-confirm", "permanent", "does not match", 0),
             ("garbage", "permanent", "not an answer", 0), (None, "permanent", "no person could be asked", 0)]
    server = StdioServerParameters(command=binary, args=["--budget-s", "20", "--fault", "busy-refund"])
    for answer, outcome, says, refunds in cases:
        asked = []
        callback = {"elicitation_callback": person(answer, asked)} if answer else {}
        async with Client(server, mode=mode, **callback) as client:
            order = f"ord-{answer}"
            meta = {TASK: f"approvals-{mode}", "dev.tool-contract/actor": "ci@desk"}
            report = report_of(await client.call_tool("refund", {"order": order, "cents": 1299}, meta=meta))
            fine = report["outcome"] == outcome and (says is None or says in report["message"])
            check(f"{mode}: approval, {answer}: {outcome}", fine, report)
            if answer:
                check(f"{mode}: approval, {answer}: one form showing the key", len(asked) == 1 and report["idempotency_key"] in asked[0], asked)
            listed = report_of(await client.call_tool("list_refunds", {"order": order}, meta=meta))
            check(f"{mode}: approval, {answer}: {refunds} refund(s) at the desk", len(listed["value"]) == refunds, listed)


async def request_states(binary):
    """2026-07-28 by hand: a replayed and a tampered request state approve nothing."""
    server = StdioServerParameters(command=binary, args=["--budget-s", "20", "--fault", "busy-refund"])
    async with Client(server, mode="2026-07-28", elicitation_callback=person("approve", [])) as client:
        s = client.session
        meta = {TASK: "states", "dev.tool-contract/actor": "ci@desk"}
        order = {"order": "ord-states", "cents": 1299}
        first = await s.call_tool("refund", order, meta=meta, allow_input_required=True)
        check("2026-07-28: the approval comes back as input required", isinstance(first, types.InputRequiredResult), first)
        state = first.request_state
        code = first.input_requests["approve"].params.message.split("confirm code ")[1][:6]
        yes = {"approve": types.ElicitResult(action="accept", content={"approve": True, "confirm": code})}
        i = len(state) // 2
        tampered = state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1:]
        try:
            bad = await s.call_tool("refund", order, meta=meta, input_responses=yes, request_state=tampered, allow_input_required=True)
            check("2026-07-28: a tampered request state is refused", False, bad)
        except Exception as error:
            check("2026-07-28: a tampered request state is refused", "request state" in str(error), error)
        done = await s.call_tool("refund", order, meta=meta, input_responses=yes, request_state=state, allow_input_required=True)
        check("2026-07-28: the answered state makes the refund", report_of(done)["outcome"] == "ok", done)
        again = await s.call_tool("refund", order, meta=meta, input_responses=yes, request_state=state, allow_input_required=True)
        check("2026-07-28: a replayed state repeats nothing", report_of(again)["outcome"] == "ok", again)
        listed = report_of(await client.call_tool("list_refunds", {"order": "ord-states"}, meta=meta))
        check("2026-07-28: exactly one refund", len(listed["value"]) == 1, listed)
        # A "no" resent as a "yes": refused, naming the first answer; nothing is paid.
        order = {"order": "ord-declined", "cents": 1299}
        asked = await s.call_tool("refund", order, meta=meta, allow_input_required=True)
        code = asked.input_requests["approve"].params.message.split("confirm code ")[1][:6]
        no = {"approve": types.ElicitResult(action="decline")}
        declined = await s.call_tool("refund", order, meta=meta, input_responses=no, request_state=asked.request_state, allow_input_required=True)
        check("2026-07-28: a declined approval pays nothing", report_of(declined)["outcome"] == "permanent", declined)
        yes = {"approve": types.ElicitResult(action="accept", content={"approve": True, "confirm": code})}
        resent = await s.call_tool("refund", order, meta=meta, input_responses=yes, request_state=asked.request_state, allow_input_required=True)
        check("2026-07-28: the no resent as a yes is refused, naming the first answer",
              "was answered already: declined" in report_of(resent)["message"], resent)
        listed = report_of(await client.call_tool("list_refunds", {"order": "ord-declined"}, meta=meta))
        check("2026-07-28: no refund after the no", len(listed["value"]) == 0, listed)


async def settled_by_the_client(binary, mode):
    """A lost refund: the next call asks the person whether it landed, and honours the answer."""
    asked = []
    server = StdioServerParameters(command=binary, args=["--budget-s", "20", "--fault", "lost-refund"])
    async with Client(server, mode=mode, elicitation_callback=person("landed", asked)) as client:
        meta = {TASK: f"settle-{mode}", "dev.tool-contract/actor": "ci@desk"}
        order = {"order": "ord-lost", "cents": 1299}
        first = report_of(await client.call_tool("refund", order, meta=meta))
        check(f"{mode}: a lost refund is unknown, nobody asked yet", first["outcome"] == "unknown" and not asked, first)
        second = report_of(await client.call_tool("refund", order, meta=meta))
        check(f"{mode}: the next call asks and answers from the person's settlement", second["outcome"] == "ok" and len(asked) == 1
              and "settled landed by ci@desk via client" in second["message"], second)
        listed = report_of(await client.call_tool("list_refunds", {"order": "ord-lost"}, meta=meta))
        check(f"{mode}: one refund after the settlement", len(listed["value"]) == 1, listed)


async def http_replay(binary):
    """2026-07-28 over HTTP, two clients of one desk with tokens of their own: a state one received
    and answered is refused when the other sends it, whatever it says; a question is bound to the
    credential it was asked with, as a session binds it in the 2025 protocols."""
    desk = subprocess.Popen([binary, "--http", "127.0.0.1:0", "--fault", "busy-refund", "--token", "client-a-token",
                             "--token", "client-b-token"], stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for _ in range(200):
            line = desk.stderr.readline()
            if "http://127.0.0.1:" in line:
                url = "http://" + line.split("http://")[1].split()[0]
                break
        check("http: a desk with two clients' tokens starts", url is not None)
        if url is None:
            return
        url = url.rstrip(".")
        def client(token):
            http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
            return Client(streamable_http_client(url, http_client=http), mode="2026-07-28",
                          elicitation_callback=person("approve", []))
        meta = {TASK: "http-replay", "dev.tool-contract/actor": "ci@desk"}
        order = {"order": "ord-http", "cents": 1299}
        async with client("client-a-token") as a, client("client-b-token") as b:
            asked = await a.session.call_tool("refund", order, meta=meta, allow_input_required=True)
            check("http 2026-07-28: the approval comes back as input required", isinstance(asked, types.InputRequiredResult), asked)
            code = asked.input_requests["approve"].params.message.split("confirm code ")[1][:6]
            yes = {"approve": types.ElicitResult(action="accept", content={"approve": True, "confirm": code})}
            moved = await b.session.call_tool("refund", order, meta=meta, input_responses=yes, request_state=asked.request_state,
                                              allow_input_required=True)
            check("http 2026-07-28: another client's answer to the question is refused",
                  "was asked in" in report_of(moved)["message"], moved)
            no = {"approve": types.ElicitResult(action="decline")}
            declined = await a.session.call_tool("refund", order, meta=meta, input_responses=no, request_state=asked.request_state,
                                                 allow_input_required=True)
            check("http 2026-07-28: the client asked declines", report_of(declined)["outcome"] == "permanent", declined)
            resent = await b.session.call_tool("refund", order, meta=meta, input_responses=yes, request_state=asked.request_state,
                                               allow_input_required=True)
            check("http 2026-07-28: the no resent by another client as a yes is refused",
                  "was answered already: declined" in report_of(resent)["message"], resent)
            listed = report_of(await a.call_tool("list_refunds", {"order": "ord-http"}, meta=meta))
            check("http 2026-07-28: no refund", len(listed["value"]) == 0, listed)
    finally:
        desk.kill()


async def refused_without_token(url):
    async with httpx2.AsyncClient() as http:
        reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"accept": "application/json, text/event-stream"})
        check("http: a request without the token is refused", reply.status_code == 401, reply.status_code)
        reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"accept": "application/json, text/event-stream", "origin": "http://evil.example",
                                         "authorization": f"Bearer {sys.argv[3]}"})
        check("http: a foreign Origin is refused", reply.status_code == 403, reply.status_code)


async def main():
    binary = sys.argv[1]
    servers = [("stdio", lambda: StdioServerParameters(command=binary, args=["--budget-s", "20"]))]
    if len(sys.argv) == 4:
        url, token = sys.argv[2], sys.argv[3]
        headers = {"authorization": f"Bearer {token}"}
        servers.append(("http", lambda: streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))))
    for transport, server in servers:
        for mode in ["legacy", "2026-07-28"]:
            try:
                await run(server(), f"{mode}" if transport == "stdio" else mode)
            except Exception as error:
                traceback.print_exc()
                check(f"{transport} {mode}: the session ran", False, error)
    for mode in ["legacy", "2026-07-28"]:
        for name, case in [("the lost refund", lost_refund), ("approvals", approvals), ("settling", settled_by_the_client)]:
            try:
                await case(binary, mode)
            except Exception as error:
                traceback.print_exc()
                check(f"{mode}: {name} ran", False, error)
    try:
        await request_states(binary)
    except Exception as error:
        traceback.print_exc()
        check("2026-07-28: the request states ran", False, error)
    if len(sys.argv) == 4:
        await refused_without_token(sys.argv[2])
    try:
        await http_replay(binary)
    except Exception as error:
        traceback.print_exc()
        check("http 2026-07-28: the replay by another client ran", False, error)
    passed, failed = results.count(True), results.count(False)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


asyncio.run(main())
