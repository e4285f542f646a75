// This node's realtime sessions: every open connection, and the slots (server.realtime.max_sessions)
// held by those that started. The free slots are what the WebSocket upgrade checks, what the node
// publishes in the cluster's registry, and the open connections are what a drain ends.

/** What the collection asks of a session (RealtimeSession implements it). */
export interface LiveSession {
  /** The node drains: stop the stream and end with session.done, reason "draining". */
  drain(): void;
  /** The drain's deadline passed: end the session now. */
  endNow(): void;
}

export class RealtimeSessions {
  private readonly open = new Set<LiveSession>();
  private readonly holding = new Set<LiveSession>();
  private emptied: (() => void) | null = null;

  constructor(
    readonly total: number,
    /** The free slots changed. */
    private readonly changed: () => void,
  ) {}

  /** Sessions holding a slot (started, not yet ended). */
  get active(): number {
    return this.holding.size;
  }

  get free(): number {
    return Math.max(0, this.total - this.holding.size);
  }

  opened(session: LiveSession): void {
    this.open.add(session);
  }

  /** Takes a slot for a session that starts; false when every slot is held. */
  take(session: LiveSession): boolean {
    if (this.holding.size >= this.total) return false;
    this.holding.add(session);
    this.changed();
    return true;
  }

  /** The session ended (either side): its slot, if it held one, is free. */
  closed(session: LiveSession): void {
    this.open.delete(session);
    if (this.holding.delete(session)) this.changed();
    if (!this.open.size) this.emptied?.();
  }

  /**
   * Ends every open session for a drain: each stops after its chunk in progress and says session.done
   * (reason "draining"); those still open at `deadline` are ended at once. Returns how many there were.
   */
  async drain(deadline: number): Promise<number> {
    const sessions = [...this.open];
    for (const session of sessions) session.drain();
    if (this.open.size) {
      let timer: Timer | undefined;
      await new Promise<void>((resolve) => {
        this.emptied = resolve;
        timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      });
      clearTimeout(timer);
      this.emptied = null;
    }
    for (const session of [...this.open]) session.endNow();
    return sessions.length;
  }
}
