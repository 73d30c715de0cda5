"""Run the contract's behaviour cases (contract/cases/*.json) over MCP against any server that declares
the fixture tools of contract/tools.json.

usage: python contract/runner.py [--only NAME] CONTRACT-DIR -- SERVER-COMMAND ARG...

It first checks contract/intent-keys.json against the key rule written out in Python (no server).

For each case the runner starts a fake service on 127.0.0.1 that answers each request as the case's
`service` schedule says, starts the server over stdio with `{service}` in its arguments replaced by
the fake's URL and `{budget_s}` by the case's budget, calls the case's tool through the `mcp` client
from PyPI (every call of a case in one task, named under `_meta` `dev.tool-contract/task`), and compares
what came out with the case: each report's outcome, effect, `retry_after_s` and items, the effects the
service applied, the requests it received and the waits between them. A report's `reason` is the
engine's and not on the wire, and the log's records are the server's: the Rust runner
(tool_contract_testing::cases) checks both. Prints one line per case, naming the case and the field that
disagrees, then `N passed, N failed`; exits 1 on any failure.

    python contract/runner.py contract -- target/debug/examples/support_desk \\
        --contract-service {service} --budget-s {budget_s}
"""

import asyncio
import email.utils
import hashlib
import json
import os
import sys
import time
import uuid

from mcp import Client, StdioServerParameters

TASK = "dev.tool-contract/task"


class Fake:
    """The fake service: the case's schedule, one fault per request, and what it applied."""

    def __init__(self, schedule, dedupe, lookup):
        self.schedule = list(schedule)
        self.dedupe = dedupe
        self.lookup_fails = lookup.get("fails", {}).get("fails", 0) if isinstance(lookup, dict) else 0
        self.lookup_late = lookup.get("late", {}).get("answers_after_s", 0) if isinstance(lookup, dict) else 0
        self.applied = {}  # key -> [ids]
        self.rows = {}  # key -> {row: times}
        self.in_flight = {}  # key -> count
        self.arrivals = []
        self.next_id = 1000
        self.began = time.monotonic()
        self.tasks = set()

    def effects(self):
        return sum(len(ids) for ids in self.applied.values()) + sum(
            n for rows in self.rows.values() for n in rows.values()
        )

    def apply(self, key):
        ids = self.applied.setdefault(key, [])
        if self.dedupe and ids:
            return ids[0]
        self.next_id += 1
        ids.append(self.next_id)
        return self.next_id

    def apply_rows(self, key, items, reject=(), defer=()):
        done = self.rows.setdefault(key, {})
        out = []
        for item in items:
            if item in reject:
                out.append({"id": item, "status": "rejected", "reason": f"{item} is invalid"})
            elif item in defer:
                out.append({"id": item, "status": "deferred", "reason": f"{item} deferred: try again"})
            else:
                done[item] = done.get(item, 0) + 1
                out.append({"id": item, "status": "applied", "reason": ""})
        return out

    def later(self, seconds, action):
        async def run():
            await asyncio.sleep(seconds)
            action()

        task = asyncio.ensure_future(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def settle(self):
        while self.tasks or self.in_flight:
            await asyncio.sleep(0.05)

    async def serve(self, reader, writer):
        try:
            request = await read_request(reader)
            if request is None:
                return
            await self.answer(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def answer(self, request, reader, writer):
        method, path, key, body = request
        if method == "GET" and path.startswith("/effects/"):
            return await self.look(path[len("/effects/"):], writer)
        if method == "POST" and path == "/batch/lookup":
            return await self.look_rows(key, body, writer)
        if method != "POST" or path not in ("/effects", "/batch") or not key:
            return respond(writer, 400, {"error": "unknown request"})
        self.arrivals.append(time.monotonic())
        fault = self.schedule.pop(0) if self.schedule else "fine"
        batch = path == "/batch"
        items = json.loads(body or b"{}").get("items", []) if batch else None
        name = fault if isinstance(fault, str) else next(iter(fault))
        spec = {} if isinstance(fault, str) else fault[name]
        if name == "refuse":
            return respond(writer, 503, {"error": "refused at the door"})
        if name == "error_body":
            error = {"error": {"kind": spec["kind"], "message": spec["message"]}}
            return respond(writer, spec["status"], error)
        if name == "retry_after":
            return respond(writer, spec["status"], {}, [("Retry-After", str(spec["seconds"]))])
        if name == "retry_after_date":
            date = email.utils.formatdate(time.time() + spec["in_s"], usegmt=True)
            return respond(writer, spec["status"], {}, [("Retry-After", date)])
        if name == "held":
            act = (lambda: self.apply_rows(key, items)) if batch else (lambda: self.apply(key))
            if not spec["reset"]:
                await reader.read()  # until the caller lets go
            self.later(spec["after_s"], act)
            return None
        if name == "slow":
            self.in_flight[key] = self.in_flight.get(key, 0) + 1
            done = {}

            def land():
                done["answer"] = self.apply_rows(key, items) if batch else self.apply(key)
                self.in_flight[key] -= 1
                if not self.in_flight[key]:
                    del self.in_flight[key]

            self.later(spec["apply_after_s"], land)
            await asyncio.sleep(spec["reply_after_s"])
            answer = done.get("answer")
            return respond(writer, 200, {"items": answer} if batch else {"id": answer})
        if batch:
            answer = self.apply_rows(key, items, spec.get("reject", ()), spec.get("defer", ()))
        else:
            answer = self.apply(key)
        if name == "drop_reply":
            return None
        return respond(writer, 200, {"items": answer} if batch else {"id": answer})

    async def look(self, key, writer):
        if self.lookup_fails > 0:
            self.lookup_fails -= 1
            return respond(writer, 500, {"error": "lookup failed"})
        ids = self.applied.get(key)
        status, body = (200, {"id": ids[0]}) if ids else ((202, {}) if key in self.in_flight else (404, {}))
        if self.lookup_late:
            await asyncio.sleep(self.lookup_late)
            if status == 202:
                status = 404
        return respond(writer, status, body)

    async def look_rows(self, key, body, writer):
        if self.lookup_fails > 0:
            self.lookup_fails -= 1
            return respond(writer, 500, {"error": "lookup failed"})
        done = self.rows.get(key, {})
        items = json.loads(body or b"{}").get("items", [])
        found = [{"id": item, "landed": done.get(item, 0) > 0} for item in items]
        if self.lookup_late:
            await asyncio.sleep(self.lookup_late)
        return respond(writer, 200, {"items": found})


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return method, path, headers.get("idempotency-key"), body


def respond(writer, status, body, headers=()):
    text = json.dumps(body).encode()
    out = [f"HTTP/1.1 {status} Status", "content-type: application/json", f"content-length: {len(text)}", "connection: close"]
    out += [f"{name}: {value}" for name, value in headers]
    writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + text)


def intent_key(task, actor, verb, target, slot):
    """The intent key, as contract/intent-keys.json states the rule."""
    parts = [task, actor, verb, target, slot or ""]
    if not any("|" in p for p in parts):
        data = "|".join(parts)
    else:
        data = "|||||" + "".join(f"{len(p.encode())}:{p}" for p in parts)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def check_keys(folder):
    """The first intent-key vector this rule disagrees with, as (field, expected, got); None if none."""
    with open(os.path.join(folder, "intent-keys.json"), encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    for v in vectors:
        got = intent_key(v["task"], v["actor"], v["verb"], v["target"], v["slot"])
        if got != v["key"]:
            return f"vector `{v['name']}`.key", v["key"], got
    return None


def field(obj, *names):
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def report_of(result):
    structured = field(result, "structured_content", "structuredContent")
    return structured if structured is not None else json.loads(result.content[0].text)


def compare(case, reports, fake):
    """The first field that disagrees, as (field, expected, got); None when the case holds."""
    expect = case["expect"]
    if len(reports) != len(expect["reports"]):
        return "reports.length", len(expect["reports"]), len(reports)
    for n, (want, got) in enumerate(zip(expect["reports"], reports)):
        for name in ("outcome", "effect_applied", "retry_after_s"):
            if name in want and want[name] != got.get(name):
                return f"reports[{n}].{name}", want[name], got.get(name)
        if "items" in want:
            items = got.get("items", [])
            if len(items) != len(want["items"]):
                return f"reports[{n}].items.length", len(want["items"]), len(items)
            for i, (w, g) in enumerate(zip(want["items"], items)):
                for name in ("id", "outcome"):
                    if w[name] != g.get(name):
                        return f"reports[{n}].items[{i}].{name}", w[name], g.get(name)
    if fake.effects() != expect["effects"]:
        return "effects", expect["effects"], fake.effects()
    if "requests" in expect and len(fake.arrivals) != expect["requests"]:
        return "requests", expect["requests"], len(fake.arrivals)
    starts = [fake.began] + fake.arrivals
    for n, wait in enumerate(expect.get("waits_at_least_s", [])):
        if n >= len(fake.arrivals):
            return f"waits_at_least_s[{n}]", f"at least {wait} s", "no such request"
        gap = fake.arrivals[n] - starts[n]
        # A wall-clock date has 1 s resolution and a real clock some jitter: 50 ms of slack.
        if gap + 0.05 < wait:
            return f"waits_at_least_s[{n}]", f"at least {wait} s", f"{gap:.3f} s"
    return None


async def run_case(case, tools, command):
    tool = tools[case["tool"]]
    fake = Fake(case.get("service", []), tool.get("dedupe") == "receiver", case.get("lookup", "truthful"))
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    budget = case["budget_s"]
    args = [a.replace("{service}", url).replace("{budget_s}", str(int(budget))) for a in command[1:]]
    try:
        async with Client(StdioServerParameters(command=command[0], args=args)) as client:
            declared = {t.name for t in (await client.list_tools()).tools}
            if case["tool"] not in declared:
                return "tool", f"the server declares `{case['tool']}`", sorted(declared)
            meta = {TASK: f"case-{case['name']}-{uuid.uuid4().hex[:8]}"}
            fake.began = time.monotonic()
            reports = []
            for call in case["calls"]:
                arguments = {"rows": call["rows"]} if "rows" in call else {"target": call["target"]}
                result = await client.call_tool(case["tool"], arguments, meta=meta)
                reports.append(report_of(result))
        await asyncio.wait_for(fake.settle(), timeout=60)
        return compare(case, reports, fake)
    finally:
        server.close()


async def main():
    argv = sys.argv[1:]
    only = None
    if argv[:1] == ["--only"]:
        only, argv = argv[1], argv[2:]
    if "--" not in argv or argv.index("--") != 1:
        print(__doc__)
        sys.exit(2)
    folder, command = argv[0], argv[2:]
    with open(os.path.join(folder, "tools.json")) as f:
        tools = {t["name"]: t for t in json.load(f)["tools"]}
    names = sorted(n for n in os.listdir(os.path.join(folder, "cases")) if n.endswith(".json"))
    passed = failed = 0
    miss = check_keys(folder)
    if miss is None:
        passed += 1
        print("ok   intent-keys")
    else:
        failed += 1
        print(f"FAIL intent-keys: {miss[0]}: expected {miss[1]}, got {miss[2]}")
    for name in names:
        with open(os.path.join(folder, "cases", name)) as f:
            case = json.load(f)
        if only and case["name"] != only:
            continue
        try:
            miss = await run_case(case, tools, command)
        except Exception as error:  # the case failed to run: say so, under its name
            miss = ("run", "the case to run", f"{type(error).__name__}: {error}")
        if miss is None:
            passed += 1
            print(f"ok   {case['name']}")
        else:
            failed += 1
            field_name, expected, got = miss
            print(f"FAIL case `{case['name']}`: {field_name}: expected {expected}, got {got}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


asyncio.run(main())
