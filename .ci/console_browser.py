"""The operator console in a real browser: Debian's headless Chromium driven by selenium.

usage: python .ci/console_browser.py PATH-TO-support_desk PATH-TO-tool-contract

An agent (support_desk over stdio, `--fault lost-notice`, its log in a file) leaves a notice in doubt.
A scripted operator opens the address `tool-contract console` printed, finds the notice among the
intents in doubt, opens its timeline, and settles it `not_landed` with evidence holding `<script>`;
the agent's next call of that intent posts exactly once (the desk counts). Also: a form posted from a
page on another 127.0.0.1 port is refused (403), a wrong `Host` is refused, no cookie gets the token
prompt, a `--read-only` console shows no form and refuses a POST. Then approvals: an agent
(`--fault busy-refund --approve-in-log`) waits for a person's yes before a refund's second attempt;
the operator finds the question on the overview and approves it (the desk pays once), and denies
another (the desk pays nothing). Screenshots of the overview, an intent's page and a waiting
approval are written to target/. Prints one line per check, then `N passed, N failed`.
"""

import asyncio
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

from mcp import Client, StdioServerParameters
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

TASK = "dev.tool-contract/task"
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + str(detail)[:2000]}")


def report_of(result):
    structured = getattr(result, "structured_content", None)
    return structured if structured is not None else json.loads(result.content[0].text)


# The token each console printed beside its address (the address logs in once), by address.
TOKENS = {}
USED = set()


def console(binary, log, *flags):
    """Start `tool-contract console`; the process and the address it printed (its token kept)."""
    proc = subprocess.Popen([binary, "console", log, "--by", "ci-operator", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "open " not in line:
        raise RuntimeError(f"the console did not start: {line} {proc.stderr.read()}")
    url = line.rsplit("open ", 1)[1].strip()
    token = proc.stdout.readline().split("the token ", 1)[1].split(" ", 1)[0]
    TOKENS[url] = token
    return proc, url


def log_in(driver, url):
    """Log in as a person does: the printed address (its page's button) the first time, which logs in
    once; the token at the prompt after that."""
    if url not in USED:
        USED.add(url)
        driver.get(url)
        driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    else:
        driver.get(url.split("/login")[0] + "/")
        field = driver.find_element(By.NAME, "token")
        field.send_keys(TOKENS[url])
        field.submit()
    # The login is a POST the browser may still be sending: a navigation now would cancel it, and the
    # one-time address would be spent. Wait for its session cookie.
    until = time.time() + 10
    while not driver.get_cookies() and time.time() < until:
        time.sleep(0.05)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def page_text(driver, needle, seconds=20):
    """The page's text once it holds `needle` (a form's answer arrives after a navigation), or as it is
    when `seconds` have passed."""
    text = ""
    until = time.time() + seconds
    while time.time() < until:
        try:
            text = driver.find_element(By.TAG_NAME, "body").text
            if needle in text:
                return text
        except Exception:  # mid-navigation: no body yet
            pass
        time.sleep(0.1)
    return text


def reload_until(driver, url, needle, seconds=20):
    """Open `url` again until its text holds `needle` (the agent writes its question a moment after the
    call starts), or as it is when `seconds` have passed."""
    text = ""
    until = time.time() + seconds
    while time.time() < until:
        driver.get(url)
        text = page_text(driver, needle, 1)
        if needle in text:
            return text
    return text


async def approvals(desk, tool_contract, scratch):
    """A refund waits for approval in the log; the operator approves one and denies another."""
    log = os.path.join(scratch, "refunds.log")
    agent = StdioServerParameters(command=desk, args=["--budget-s", "60", "--log", log, "--fault", "busy-refund",
                                                      "--approve-in-log"])
    async with Client(agent, mode="legacy") as client:
        meta = {TASK: "ticket-11", "dev.tool-contract/actor": "agent:desk"}
        proc, url = None, None
        for order, answer in [("order-7", "approve"), ("order-8", "deny")]:
            call = asyncio.create_task(client.call_tool("refund", {"order": order, "cents": 1250}, meta=meta))
            await asyncio.sleep(1.0)  # the request goes out; the agent asks in its log and waits
            if proc is None:
                proc, url = console(tool_contract, log)
            base = url.split("/login")[0]
            driver = browser()
            try:
                log_in(driver, url)
                body = reload_until(driver, f"{base}/", "Waiting for approval: 1")
                check(f"{order}: the overview lists the refund waiting for approval",
                      "Waiting for approval: 1" in body and "503" in body, body)
                if answer == "approve":
                    driver.save_screenshot("target/console-approval.png")
                why = "ledger shows nothing paid" if answer == "approve" else "customer withdrew the request"
                driver.find_element(By.NAME, "why").send_keys(why)
                driver.find_element(By.CSS_SELECTOR, f"form.approval button[value={answer}]").click()
                body = page_text(driver, "nswered: ")
                word = "approved" if answer == "approve" else "denied"
                check(f"{order}: {word} through the agent holding the log",
                      f"Answered: attempt 2 {word} by ci-operator: {why}" in body, body)
            finally:
                driver.quit()
            report = report_of(await asyncio.wait_for(call, 30))
            listed = report_of(await client.call_tool("list_refunds", {"order": order}, meta=meta))
            if answer == "approve":
                check(f"{order}: the refund is made after the yes", report["outcome"] == "ok", report)
                check(f"{order}: exactly one refund at the desk", len(listed["value"]) == 1, listed)
            else:
                check(f"{order}: the refund stops at the no, with the operator's reason",
                      report["outcome"] == "permanent" and "ci-operator said no: " + why in report["message"], report)
                check(f"{order}: no refund at the desk", len(listed["value"]) == 0, listed)
        proc.terminate()


def raw(url, headers=None, data=None):
    """A request outside the browser: status and body (no redirect followed)."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with opener.open(request, timeout=10) as reply:
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


def foreign_page(target):
    """Serve, on another 127.0.0.1 port, a page whose form posts to `target` by itself."""
    page = f"""<html><body><form id="f" method="post" action="{target}">
<input name="verdict" value="landed"><input name="evidence" value="cross-site"></form>
<script>document.getElementById('f').submit()</script></body></html>""".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


async def main():
    desk, tool_contract = sys.argv[1], sys.argv[2]
    os.makedirs("target", exist_ok=True)
    scratch = tempfile.mkdtemp()
    log = os.path.join(scratch, "attempts.log")
    agent = StdioServerParameters(command=desk, args=["--budget-s", "3", "--log", log, "--fault", "lost-notice"])
    async with Client(agent, mode="legacy") as client:
        meta = {TASK: "ticket-9", "dev.tool-contract/actor": "agent:desk"}
        notice = {"thread": "thread-9", "text": "Your refund was sent."}
        posted = time.monotonic()
        first = report_of(await client.call_tool("post_notice", notice, meta=meta))
        check("the agent's notice is in doubt", first["outcome"] == "unknown", first)
        key = first["idempotency_key"]

        proc, url = console(tool_contract, log)
        base = url.split("/login")[0]
        driver = browser()
        try:
            log_in(driver, url)
            body = page_text(driver, "In doubt")
            check("the overview lists the notice in doubt", "In doubt: 1" in body and key in body, body)
            driver.save_screenshot("target/console-overview.png")
            driver.find_element(By.LINK_TEXT, key).click()
            page_text(driver, "Settle attempt")
            check("the intent's page draws its timeline", driver.find_elements(By.CSS_SELECTOR, "svg circle"), driver.page_source)
            driver.save_screenshot("target/console-intent.png")
            # A person's "not landed" counts only if they saw the attempt once the notice could no longer
            # land: when its call ended (at once: the connection was reset), read as up to two seconds
            # later (stamps in whole seconds, clocks a second apart), plus its landing horizon (5 s); and
            # when the page showed it is read as up to two seconds earlier. The page is shown again then.
            await asyncio.sleep(max(0.0, 11.0 - (time.monotonic() - posted)))
            driver.refresh()
            page_text(driver, "Settle attempt")
            driver.find_element(By.CSS_SELECTOR, "input[value=not_landed]").click()
            driver.find_element(By.NAME, "evidence").send_keys("<script>alert(1)</script> thread-9 holds no notice")
            driver.find_element(By.CSS_SELECTOR, "form.settle button").click()
            body = page_text(driver, "ettled: ")
            check("settled through the agent holding the log", "Settled: settled not landed by ci-operator" in body, body)
            check("evidence holding <script> is shown as text", "<script>alert(1)</script> thread-9" in body
                  and "&lt;script&gt;" in driver.page_source, driver.page_source)
            driver.save_screenshot("target/console-settled.png")

            second = report_of(await client.call_tool("post_notice", notice, meta=meta))
            check("the agent's next call posts", second["outcome"] == "ok", second)
            listed = report_of(await client.call_tool("list_notices", {"thread": "thread-9"}, meta=meta))
            check("exactly one notice at the desk", len(listed["value"]) == 1, listed)

            server, foreign = foreign_page(f"{base}/intent/{key}/settle")
            driver.get(foreign)
            body = page_text(driver, "another origin is refused")
            check("a form posted from another 127.0.0.1 port is refused", "another origin is refused" in body, driver.page_source)
            server.shutdown()
        finally:
            driver.quit()
            proc.terminate()

        status, body, headers = raw(f"{base}/", headers={"Host": "evil.example"})
        check("a wrong Host is refused", status == 403, (status, body))
        lowered = {k.lower(): v for k, v in headers.items()}
        check("a refusal carries the security headers too",
              "frame-ancestors 'none'" in lowered.get("content-security-policy", "")
              and lowered.get("referrer-policy") == "same-origin", lowered)
        status, body, headers = raw(f"{base}/login?token={TOKENS[url]}")
        check("a link with the right token logs no one in",
              status != 303 and "set-cookie" not in {k.lower() for k in headers}, (status, headers))
        status, body, _ = raw(f"{base}/")
        check("no cookie gets the token prompt", status == 401 and "needs its token" in body, (status, body))

        proc, url = console(tool_contract, log, "--read-only")
        base = url.split("/login")[0]
        driver = browser()
        try:
            log_in(driver, url)
            driver.get(f"{base}/intent/{key}")
            check("a read-only console shows no form", not driver.find_elements(By.CSS_SELECTOR, "form.settle"), driver.page_source)
        finally:
            driver.quit()
        status, _, headers = raw(f"{base}/login", data=f"token={TOKENS[url]}".encode(),
                                 headers={"Origin": base, "Content-Type": "application/x-www-form-urlencoded"})
        cookie = {k.lower(): v for k, v in headers.items()}.get("set-cookie", "").split(";")[0]
        status, body, _ = raw(f"{base}/intent/{key}/settle", data=b"verdict=landed&evidence=x",
                              headers={"Cookie": cookie, "Origin": base, "Content-Type": "application/x-www-form-urlencoded"})
        check("a read-only console refuses a POST", status == 403 and "read-only" in body, (status, body))
        proc.terminate()

    await approvals(desk, tool_contract, scratch)

    passed, failed = results.count(True), results.count(False)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


try:
    asyncio.run(main())
except Exception:
    traceback.print_exc()
    print(f"{results.count(True)} passed, {results.count(False) + 1} failed")
    sys.exit(1)
