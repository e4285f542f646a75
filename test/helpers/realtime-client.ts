// A WebSocket client for /v1/realtime/video tests and benches: keeps every server message in arrival
// order (JSON text parsed, binary as Uint8Array) with the moment it arrived, and lets a caller wait for
// the next message matching a predicate.

/** A WebSocket upgrade request's headers, for fetch: a server that refuses answers it like any request. */
export const upgradeHeaders = {
  connection: "Upgrade",
  upgrade: "websocket",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  "sec-websocket-version": "13",
};

export type Received = { kind: "json"; message: any } | { kind: "binary"; bytes: Uint8Array };

export class RealtimeClient {
  readonly received: Received[] = [];
  /** performance.now() when each of `received` arrived (same index). */
  readonly arrivedAt: number[] = [];
  private waiters: (() => void)[] = [];
  closed: Promise<{ code: number; reason: string }>;
  private readonly ws: WebSocket;
  private cursor = 0;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.binaryType = "arraybuffer";
    ws.onmessage = (e) => {
      this.arrivedAt.push(performance.now());
      this.received.push(typeof e.data === "string" ? { kind: "json", message: JSON.parse(e.data) } : { kind: "binary", bytes: new Uint8Array(e.data) });
      this.wake();
    };
    this.closed = new Promise((resolve) => {
      ws.onclose = (e) => {
        resolve({ code: e.code, reason: e.reason });
        this.wake();
      };
    });
  }

  static async connect(baseUrl: string, headers: Record<string, string> = {}, query = ""): Promise<RealtimeClient> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/realtime/video${query}`, { headers } as never);
    const client = new RealtimeClient(ws);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = reject;
    });
    return client;
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(message: unknown): void {
    this.ws.send(typeof message === "string" || message instanceof Uint8Array ? (message as never) : JSON.stringify(message));
  }

  close(): void {
    this.ws.close();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Index in `received` (and `arrivedAt`) of the message next() returned last. */
  get lastIndex(): number {
    return this.cursor - 1;
  }

  /** The next unread message (any kind); throws on timeout or if the socket closes first. */
  async next(timeoutMs = 15000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    while (this.cursor >= this.received.length) {
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting; received ${JSON.stringify(this.summary())}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting; received ${JSON.stringify(this.summary())}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
    return this.received[this.cursor++]!;
  }

  /** Skips to the next JSON message of this type (binary and other messages are passed over but kept). */
  async nextOfType(type: string, timeoutMs = 15000): Promise<any> {
    for (;;) {
      const r = await this.next(timeoutMs);
      if (r.kind === "json" && r.message.type === type) return r.message;
    }
  }

  /** Reads until session.done (or close) and returns everything received so far. */
  async untilDone(timeoutMs = 30000): Promise<Received[]> {
    await this.nextOfType("session.done", timeoutMs);
    return this.received;
  }

  jsonMessages(): any[] {
    return this.received.filter((r) => r.kind === "json").map((r) => (r as { message: any }).message);
  }

  summary(): string[] {
    return this.received.map((r) => (r.kind === "json" ? r.message.type + (r.message.code ? `:${r.message.code}` : "") : `<${r.bytes.length} bytes>`));
  }
}
