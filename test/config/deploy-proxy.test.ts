// deploy/nginx.conf run by a real nginx in front of two stand-in nodes on loopback: a node that answers
// the realtime upgrade with 503 (no free session slot) is skipped and the session opens on the other;
// when every node is full the client gets the 503 with its Retry-After; /metrics stays inside. The
// config is used as written, with only the node addresses and the listening port made local.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Server } from "bun";
import { freePort } from "../cluster/infra.ts";

const nginx = Bun.which("nginx") ?? (Bun.file("/usr/sbin/nginx").size ? "/usr/sbin/nginx" : null);
if (!nginx) console.warn("skipping the proxy test: nginx is not installed (apt-get install nginx-light)");

/** A stand-in kino node: refuses upgrades with 503 while `full`, else upgrades and says who it is. */
function standIn(name: string) {
  const state = { full: false, upgrades: 0 };
  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request, srv) {
      const { pathname } = new URL(request.url);
      if (pathname === "/v1/realtime/video") {
        state.upgrades++;
        if (state.full) return new Response("full", { status: 503, headers: { "Retry-After": "2" } });
        if (srv.upgrade(request)) return undefined;
        return new Response("not a WebSocket request", { status: 400 });
      }
      return new Response(`${name} ${pathname}`);
    },
    websocket: { open: (ws) => ws.send(`session on ${name}`), message() {} },
  });
  return { name, server, state };
}

describe.skipIf(!nginx)("deploy/nginx.conf in a real nginx", () => {
  const a = standIn("kino-a");
  const b = standIn("kino-b");
  let dir: string;
  let proxy: ReturnType<typeof Bun.spawn>;
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kino-nginx-"));
    const port = await freePort();
    // Its own temp paths and pid file (below), so it needs nothing of the machine's nginx setup.
    const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `${t}_temp_path ${dir}/${t};`).join(" ");
    const conf = readFileSync(resolve(import.meta.dir, "../../deploy/nginx.conf"), "utf8")
      .replaceAll("kino-a:8000", `127.0.0.1:${a.server.port}`)
      .replaceAll("kino-b:8000", `127.0.0.1:${b.server.port}`)
      .replace("listen 80;", `listen 127.0.0.1:${port};`)
      .replace("http {", `http {\n  ${temp}\n  access_log off;`);
    writeFileSync(join(dir, "nginx.conf"), conf);
    proxy = Bun.spawn([nginx!, "-p", dir, "-c", join(dir, "nginx.conf"), "-e", "stderr", "-g", `daemon off; pid ${dir}/nginx.pid;`], { stderr: "pipe" });
    url = `127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      if (await fetch(`http://${url}/health`).then((r) => r.ok).catch(() => false)) return;
      await Bun.sleep(50);
    }
    throw new Error(`nginx did not start: ${await new Response(proxy.stderr as ReadableStream).text()}`);
  });
  afterAll(async () => {
    proxy?.kill();
    await proxy?.exited;
    a.server.stop(true);
    b.server.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  const open = () =>
    new Promise<string>((done, fail) => {
      const ws = new WebSocket(`ws://${url}/v1/realtime/video`);
      ws.onmessage = (e) => (done(String(e.data)), ws.close());
      ws.onerror = () => fail(new Error("the upgrade failed"));
    });

  test("a full node's 503 sends the upgrade on to the node with room, whichever the proxy tried first", async () => {
    a.state.full = true;
    for (let i = 0; i < 4; i++) expect(await open()).toBe("session on kino-b");
    a.state.full = false;
    b.state.full = true;
    for (let i = 0; i < 4; i++) expect(await open()).toBe("session on kino-a");
    b.state.full = false;
  });

  test("with every node full the client gets the 503 and its Retry-After, after each node was asked once", async () => {
    a.state.full = b.state.full = true;
    const before = a.state.upgrades + b.state.upgrades;
    const res = await fetch(`http://${url}/v1/realtime/video`, { headers: { upgrade: "websocket", connection: "Upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" } });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(a.state.upgrades + b.state.upgrades - before).toBe(2);
    a.state.full = b.state.full = false;
  });

  test("REST goes to the nodes; /metrics does not leave the internal network", async () => {
    const bodies = new Set<string>();
    for (let i = 0; i < 6; i++) bodies.add(await (await fetch(`http://${url}/v1/models`)).text());
    expect([...bodies].sort()).toEqual(["kino-a /v1/models", "kino-b /v1/models"]);
    expect((await fetch(`http://${url}/metrics`)).status).toBe(404);
  });
});
