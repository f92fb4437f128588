// The status page at `GET /` (private to src/gateway/): one self-contained HTML document with
// inline CSS and JS, no build step, no CDN. It holds no data: its script reads the live feed
// (`GET /events`, SSE read with fetch and a stream reader so that it can send `Authorization:
// Bearer`) and refreshes each endpoint's lease with `GET /tools/{endpoint_id}`. Every datum is
// inserted with textContent or dataset, never as markup. The Content-Security-Policy allows
// exactly the inline style and script by their SHA-256 hashes, and connections to the page's
// own origin.

const STYLE = `
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.05em;margin-top:1.5em}
table{border-collapse:collapse;min-width:40em}
th,td{text-align:left;padding:.25em .8em;border-bottom:1px solid #ddd}
th{background:#f4f4f4}td.id{font-family:monospace}
#conn{font-weight:bold}.live{color:#060}.down{color:#a00}
`;

const SCRIPT = `"use strict";
const $ = (id) => document.getElementById(id);
const KEY = "forge-gateway-token";
const endpoints = new Map();
const invocations = new Map();
// Browser code: the feed now (its fetch is aborted on reconnect); timers are the window's.
const feed = { controller: undefined };
function auth() {
  const token = sessionStorage.getItem(KEY);
  return token ? { authorization: "Bearer " + token } : {};
}
function ms(v) { return v < 1000 ? Math.round(v) + " ms" : (v / 1000).toFixed(1) + " s"; }
function cell(row, text, name) {
  const td = document.createElement("td");
  td.textContent = text;
  td.className = name;
  row.append(td);
}
function render() {
  const now = performance.now();
  const eb = $("endpoints");
  eb.replaceChildren();
  for (const id of [...endpoints.keys()].sort()) {
    const e = endpoints.get(id);
    const tr = document.createElement("tr");
    tr.dataset.endpoint = id;
    cell(tr, id, "id");
    cell(tr, e.state + (e.reported ? " (" + e.reported + ")" : ""), "state");
    cell(tr, e.lease == null ? "-" : ms(Math.max(0, e.lease - (now - e.at))), "lease");
    eb.append(tr);
  }
  const ib = $("invocations");
  ib.replaceChildren();
  for (const [id, v] of [...invocations].reverse()) {
    const tr = document.createElement("tr");
    tr.dataset.invocation = id;
    tr.dataset.phase = v.phase;
    cell(tr, id, "id");
    cell(tr, v.endpoint_id, "endpoint");
    cell(tr, v.operation, "operation");
    cell(tr, v.phase, "phase");
    cell(tr, ms(v.age_ms + ((v.ended ?? now) - v.at)), "age");
    cell(tr, v.last_event ?? "-", "event");
    ib.append(tr);
  }
  $("no-endpoints").hidden = endpoints.size > 0;
  $("no-invocations").hidden = invocations.size > 0;
}
function status(text, live) {
  $("conn").textContent = text;
  $("conn").className = live ? "live" : "down";
}
async function refresh(id) {
  try {
    const res = await fetch("tools/" + encodeURIComponent(id), { headers: auth(), cache: "no-store" });
    if (!res.ok) return;
    const d = (await res.json()).data;
    endpoints.set(id, {
      state: d.state, lease: d.lease_left_ms ?? null, reported: d.status?.state ?? null,
      at: performance.now(),
    });
    render();
  } catch {}
}
function handle(event, data) {
  const now = performance.now();
  if (event === "snapshot") {
    endpoints.clear();
    invocations.clear();
    for (const e of data.endpoints) {
      endpoints.set(e.endpoint_id, {
        state: e.state, lease: e.lease_left_ms, reported: e.reported_state, at: now,
      });
    }
    for (const v of data.invocations) {
      invocations.set(v.invocation_id, { ...v, at: now, ended: v.phase === "running" ? undefined : now });
    }
  } else if (event === "registry" && data.endpoint_id !== undefined) {
    const e = endpoints.get(data.endpoint_id) ?? { state: "unavailable", lease: null, reported: null, at: now };
    if (data.kind === "unregistered" || data.kind === "expired") {
      endpoints.set(data.endpoint_id, { state: "unavailable", lease: null, reported: null, at: now });
    } else if (data.kind === "state") {
      endpoints.set(data.endpoint_id, { ...e, reported: data.state });
    } else refresh(data.endpoint_id);
  } else if (event === "invocation") {
    const v = invocations.get(data.invocation_id);
    if (data.kind === "created") {
      invocations.set(data.invocation.invocation_id, { ...data.invocation, at: now });
    } else if (data.kind === "forgotten") invocations.delete(data.invocation_id);
    else if (v !== undefined) {
      v.phase = data.phase;
      if (data.kind === "event") v.last_event = data.event_type;
      if (data.kind === "ended") v.ended = now;
    }
  }
  render();
}
async function connect() {
  feed.controller?.abort();
  const controller = new AbortController();
  feed.controller = controller;
  let res;
  try {
    res = await fetch("events", { headers: auth(), signal: controller.signal, cache: "no-store" });
  } catch {
    status("disconnected", false);
    return void window.setTimeout(connect, 2000);
  }
  if (res.status === 401) {
    $("auth").hidden = false;
    return status("a bearer token is needed", false);
  }
  if (!res.ok) {
    status("error " + res.status, false);
    return void window.setTimeout(connect, 2000);
  }
  $("auth").hidden = true;
  status("live", true);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      for (let end; (end = buffer.indexOf("\\n\\n")) >= 0;) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message", data = "";
        for (const line of block.split("\\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data !== "") handle(event, JSON.parse(data));
      }
    }
  } catch {}
  if (feed.controller === controller) {
    status("disconnected", false);
    window.setTimeout(connect, 2000);
  }
}
$("auth").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY, $("token").value);
  $("token").value = "";
  connect();
});
window.setInterval(() => { for (const id of endpoints.keys()) refresh(id); }, 5000);
window.setInterval(render, 1000);
connect();
`;

const BODY = `<h1>Forge tool gateway</h1>
<p>Feed: <span id="conn" class="down">connecting</span></p>
<form id="auth" hidden><label>Bearer token <input id="token" type="password" autocomplete="off"></label>
<button>Connect</button></form>
<h2>Endpoints</h2>
<table><thead><tr><th>endpoint</th><th>state</th><th>lease left</th></tr></thead>
<tbody id="endpoints"></tbody></table><p id="no-endpoints">No endpoint is configured.</p>
<h2>Invocations</h2>
<table><thead><tr><th>invocation</th><th>endpoint</th><th>operation</th><th>phase</th><th>age</th>
<th>last event</th></tr></thead><tbody id="invocations"></tbody></table>
<p id="no-invocations">No invocation of yours is running or retained.</p>
`;

/** The page's HTML. */
export const STATUS_PAGE_HTML: string = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Forge tool gateway</title><style>${STYLE}</style></head>
<body>${BODY}<script>${SCRIPT}</script></body></html>
`;

async function sha256Source(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`;
}

/**
 * The page's Content-Security-Policy: nothing but its own style, script and origin. Computed per
 * request (two SHA-256 digests of a few KB), so the module keeps no state.
 */
export async function statusPagePolicy(): Promise<string> {
  const [style, script] = await Promise.all([sha256Source(STYLE), sha256Source(SCRIPT)]);
  return [
    "default-src 'none'",
    `script-src ${script}`,
    `style-src ${style}`,
    "connect-src 'self'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The `GET /` response. */
export async function statusPageResponse(): Promise<Response> {
  return new Response(STATUS_PAGE_HTML, {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": await statusPagePolicy(),
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    },
  });
}
