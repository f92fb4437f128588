// Identity and ownership over HTTP: bearer tokens name callers; 401 without or with a wrong
// token; another caller's invocation is 404 on every route (the body of an unknown id) and
// absent from its list; without tokens one start record says the service is unauthenticated.
import { assertEquals } from "@std/assert";
import { ENDPOINT, startHarness } from "./http_helpers.ts";

const TOKENS = { "alice-token-0123456789": "alice", "bob-token-9876543210": "bob" };
const ALICE = "alice-token-0123456789";
const BOB = "bob-token-9876543210";

Deno.test("http ownership: 401 without a token, with a wrong one, or another scheme", async () => {
  const h = await startHarness({ tokens: TOKENS });
  const unauthorized = {
    ok: false,
    msg: "missing or unknown bearer token: send 'Authorization: Bearer <token>' with a " +
      "configured token",
    error: {
      code: "FORGE_TOOL_UNAUTHORIZED",
      message: "missing or unknown bearer token: send 'Authorization: Bearer <token>' with a " +
        "configured token",
      retryable: false,
      details: {},
    },
  };
  for (
    const headers of <Record<string, string>[]> [
      {},
      { authorization: "Bearer alice-token-0123456788" },
      { authorization: "Bearer " },
      { authorization: `Basic ${ALICE}` },
    ]
  ) {
    const response = await h.fetch("/tools", { headers });
    assertEquals(response.status, 401);
    assertEquals(response.headers.get("www-authenticate"), 'Bearer realm="forge-gateway"');
    assertEquals(await response.json(), unauthorized);
  }
  assertEquals((await h.json("/tools", { token: ALICE })).status, 200);
  // One start record, info: tokens are required.
  const starts = h.logs.filter((record) => record.event === "gateway.http_listening");
  assertEquals(starts.map((record) => record.level), ["info"]);
  await h.close();
});

Deno.test("http ownership: another caller's invocation is 404 on every route, and not listed", async () => {
  const h = await startHarness({ tokens: TOKENS, stepMs: 20 });
  const started = await h.json(`/tools/${ENDPOINT}/policy:invoke`, {
    method: "POST",
    body: "{}",
    token: ALICE,
  });
  assertEquals(started.status, 202);
  const id = (started.body.data as Record<string, unknown>).invocation_id as string;
  assertEquals((started.body.data as Record<string, unknown>).caller_id, "alice");
  const unknown = await h.json("/invocations/no-such-id", { token: BOB });
  const notFound = (invocationId: string) => ({
    status: 404,
    body: {
      ok: false,
      msg: `invocation '${invocationId}' not found (unknown, forgotten after its retention, or ` +
        `another caller's); GET /invocations lists yours`,
      error: {
        code: "FORGE_TOOL_INVOCATION_NOT_FOUND",
        message: `invocation '${invocationId}' not found (unknown, forgotten after its ` +
          `retention, or another caller's); GET /invocations lists yours`,
        retryable: false,
        details: { invocation_id: invocationId },
      },
    },
  });
  assertEquals(unknown, notFound("no-such-id"));
  for (
    const [path, method] of [
      [`/invocations/${id}`, "GET"],
      [`/invocations/${id}/result`, "GET"],
      [`/invocations/${id}/events`, "GET"],
      [`/invocations/${id}/stop`, "POST"],
      [`/invocations/${id}/cancel`, "POST"],
    ]
  ) {
    assertEquals(await h.json(path, { method, token: BOB }), notFound(id), `${method} ${path}`);
  }
  assertEquals((await h.json("/invocations", { token: BOB })).body, {
    ok: true,
    data: { invocations: [] },
  });
  const aliceList = await h.json("/invocations", { token: ALICE });
  const rows = (aliceList.body.data as { invocations: Record<string, unknown>[] }).invocations;
  assertEquals(rows.map((row) => [row.invocation_id, row.caller_id, row.phase]), [
    [id, "alice", "running"],
  ]);
  // Bob's stop did not reach it; Alice's does.
  assertEquals((await h.json(`/invocations/${id}`, { token: ALICE })).status, 200);
  assertEquals(
    (await h.json(`/invocations/${id}/stop`, { method: "POST", token: ALICE })).status,
    202,
  );
  // A body caller_id other than the token's is refused.
  const spoof = await h.json(`/tools/${ENDPOINT}/detect:invoke`, {
    method: "POST",
    body: JSON.stringify({ caller_id: "alice" }),
    token: BOB,
  });
  assertEquals(spoof.status, 409);
  assertEquals(
    spoof.body.msg,
    "caller_id 'alice' is not the caller this token authenticates; omit caller_id",
  );
  await h.close();
});

Deno.test("http ownership: without tokens one warn record says every request is the anonymous caller on 127.0.0.1", async () => {
  const h = await startHarness();
  const starts = h.logs.filter((record) => record.event === "gateway.http_listening");
  assertEquals(starts.map((record) => [record.level, record.message]), [[
    "warn",
    `gateway Tool API on ${h.base} without authentication: every request is the caller ` +
    `'anonymous'; bound to 127.0.0.1 only; configure 'tokens' to authenticate callers`,
  ]]);
  assertEquals(h.server.addr.hostname, "127.0.0.1");
  await h.close();
});
