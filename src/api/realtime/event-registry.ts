// Idempotency of interaction event ids within one session (the spec, not vLLM-Omni, which rejects
// every repeated id): same id + same payload is a retry; same id + another payload is a conflict;
// an event that failed frees its id.

export type Admission = "new" | "retry" | "conflict";

export class EventRegistry {
  private readonly payloads = new Map<string, string>();

  admit(eventId: string, payload: unknown): Admission {
    const key = canonicalJson(payload);
    const seen = this.payloads.get(eventId);
    if (seen === undefined) {
      this.payloads.set(eventId, key);
      return "new";
    }
    return seen === key ? "retry" : "conflict";
  }

  release(eventId: string): void {
    this.payloads.delete(eventId);
  }
}

/** JSON with object keys sorted, so payloads compare by content, not by key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
