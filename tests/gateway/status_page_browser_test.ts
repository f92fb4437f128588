// The status page in a real headless browser: Debian's chromium driven by puppeteer-core. With
// bearer tokens the page asks for one, keeps it in sessionStorage and reads its feed with it; it
// lists the registered endpoint (and renders an endpoint id made of markup as text), shows an
// Action appear, running, and end when it is cancelled. Skips where chromium or the npm package
// is missing. The waits' timeout is a hang guard, not a timing assertion.
import { assertEquals } from "@std/assert";
import { serveToolGateway, ToolGateway } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { HostedEndpoint } from "./_hosted.ts";

const CHROMIUM = "/usr/bin/chromium";
const ENDPOINT = "robot.demo";
const EVIL = '<img src=x onerror="window.__xss=1">';
const HANG_GUARD_MS = 60_000;

// Minimal shapes of what the test uses, so that type checking needs no npm package.
interface Page {
  goto(url: string): Promise<unknown>;
  waitForSelector(selector: string, options: { timeout: number; visible?: boolean }): Promise<
    unknown
  >;
  type(selector: string, text: string): Promise<void>;
  keyboard: { press(key: string): Promise<void> };
  evaluate<T>(fn: string): Promise<T>;
  on(event: "console", listener: (message: { text(): string }) => void): void;
}
interface Browser {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
interface Puppeteer {
  launch(options: Record<string, unknown>): Promise<Browser>;
}

async function loadPuppeteer(): Promise<Puppeteer | string> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    return `no browser at ${CHROMIUM}`;
  }
  try {
    // A computed specifier: type checking never needs the package, and a missing one skips.
    const name = "puppeteer-core";
    return (await import(name)).default as Puppeteer;
  } catch {
    return "the npm package puppeteer-core cannot load";
  }
}

const puppeteer = await loadPuppeteer();
const skip = typeof puppeteer === "string" ? puppeteer : undefined;

Deno.test({
  name: "status page in chromium: token prompt, endpoint listed, an Action appears and ends" +
    (skip === undefined ? "" : ` (skipped: ${skip})`),
  ignore: skip !== undefined,
  async fn() {
    const gateway = new ToolGateway({
      routes: { demo: ENDPOINT, evil: EVIL },
      logger: () => {},
    });
    const hosted = new HostedEndpoint(
      gateway,
      "demo",
      demoEndpoint(100).createHandler({ endpointInstanceId: "demo-1" }),
    );
    hosted.register();
    const server = serveToolGateway(gateway, {
      port: 0,
      tokens: { "token-a": "alice" },
      logger: () => {},
    });
    const base = `http://127.0.0.1:${server.addr.port}`;
    const userDataDir = await Deno.makeTempDir({ prefix: "forge-status-chromium-" });
    const browser = await (puppeteer as Puppeteer).launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    try {
      const page = await browser.newPage();
      const consoleLines: string[] = [];
      page.on("console", (message) => consoleLines.push(message.text()));
      const wait = (selector: string) =>
        page.waitForSelector(selector, { timeout: HANG_GUARD_MS, visible: true });
      await page.goto(`${base}/`);
      // The page's feed answered 401: it asks for a token.
      await wait("#auth");
      await page.type("#token", "token-a");
      await page.keyboard.press("Enter");
      await wait(`tr[data-endpoint="${ENDPOINT}"]`);
      assertEquals(
        await page.evaluate<string>("document.getElementById('conn').textContent"),
        "live",
      );
      assertEquals(
        await page.evaluate<string[]>(
          `[...document.querySelectorAll("#endpoints tr")].map((tr) =>
            [...tr.children].slice(0, 2).map((td) => td.textContent).join(" | "))`,
        ),
        [`${EVIL} | unavailable`, `${ENDPOINT} | registered`],
      );
      // The markup in the endpoint id is text: no element made of it, no handler run.
      assertEquals(await page.evaluate<number>("document.querySelectorAll('img').length"), 0);
      assertEquals(await page.evaluate<boolean>("'__xss' in window"), false);
      assertEquals(
        await page.evaluate<string | null>("sessionStorage.getItem('forge-gateway-token')"),
        "token-a",
      );

      const auth = { authorization: "Bearer token-a" };
      const started = await fetch(`${base}/tools/${ENDPOINT}/move:invoke`, {
        method: "POST",
        headers: auth,
        body: "{}",
      });
      assertEquals(started.status, 202);
      const id = (await started.json()).data.invocation_id as string;
      const row = `tr[data-invocation="${id}"]`;
      await wait(`${row}[data-phase="running"]`);
      const cancelled = await fetch(`${base}/invocations/${id}/cancel`, {
        method: "POST",
        headers: auth,
        body: "{}",
      });
      assertEquals(cancelled.status, 202);
      await cancelled.body?.cancel();
      await wait(`${row}[data-phase="cancelled"]`);
      assertEquals(
        await page.evaluate<string[]>(
          `[...document.querySelectorAll('${row} td')].map((td) => td.className + "=" +
            (td.className === "age" || td.className === "event" ? "" : td.textContent))`,
        ),
        [`id=${id}`, `endpoint=${ENDPOINT}`, "operation=move", "phase=cancelled", "age=", "event="],
      );
      assertEquals(consoleLines.filter((line) => /Content.Security.Policy/i.test(line)), []);
    } finally {
      await browser.close();
      await server.close();
      await hosted.close();
      await gateway.close();
      await Deno.remove(userDataDir, { recursive: true });
    }
  },
});
