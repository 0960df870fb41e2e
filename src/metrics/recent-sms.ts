/**
 * The last SMS the daemon spooled, for the status page: a bounded list fed by the events the daemon already
 * publishes (`sms` when a record is written to pending, `delivery` for each recorded POST result), seeded at start
 * with the pending records. PURE (no I/O, no clock): what comes in is kept as given; at most `limit` entries, the
 * oldest dropped first. Also remembers, per modem, when its last SMS was received (not bounded by `limit`: one
 * entry per modem name seen).
 */

export interface RecentSms {
  id: string;
  modem: string;
  sender: string;
  text: string;
  /** ISO, when the bridge read it. */
  receivedAt: string;
  state: 'pending' | 'retry' | 'delivered' | 'dead';
  /** POSTs recorded for it (delivered, retry or dead), including those before the daemon started when seeded. */
  attempts: number;
  /** The last POST's outcome ("HTTP 200", the error and next attempt, the dead reason). */
  outcome?: string;
}

const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);

export class RecentSmsList {
  private readonly items: RecentSms[] = [];
  private readonly lastAt = new Map<string, string>();

  constructor(private readonly limit: number) {}

  /** Records already pending at start (oldest first), with their attempts so far. */
  seed(
    records: ReadonlyArray<{
      id: string;
      sim: { modem: string };
      sender: string;
      text: string;
      receivedAt: string;
      attempts: number;
      lastError?: string | undefined;
    }>,
  ): void {
    for (const r of records) {
      this.add({
        id: r.id,
        modem: r.sim.modem,
        sender: r.sender,
        text: r.text,
        receivedAt: r.receivedAt,
        state: r.attempts > 0 ? 'retry' : 'pending',
        attempts: r.attempts,
        ...(r.lastError ? { outcome: r.lastError } : {}),
      });
    }
  }

  /** A control-socket event (see daemon/spool-events.ts); other events and odd shapes are ignored. */
  onEvent(e: { event: string; data: unknown }): void {
    const d = (e.data ?? {}) as Record<string, unknown>;
    const id = str(d.id);
    if (id === undefined) return;
    if (e.event === 'sms') {
      const modem = str(d.modem) ?? '?';
      this.add({
        id,
        modem,
        sender: str(d.sender) ?? '',
        text: str(d.text) ?? '',
        receivedAt: str(d.receivedAt) ?? '',
        state: 'pending',
        attempts: 0,
      });
    } else if (e.event === 'delivery') {
      const item = this.items.find((x) => x.id === id);
      const status = str(d.status);
      if (!item || (status !== 'delivered' && status !== 'retry' && status !== 'dead')) return;
      item.state = status;
      item.attempts += 1;
      const outcome = str(d.outcome);
      if (outcome !== undefined) item.outcome = outcome;
    }
  }

  private add(item: RecentSms): void {
    if (this.limit > 0 && !this.items.some((x) => x.id === item.id)) {
      this.items.push(item);
      if (this.items.length > this.limit) this.items.splice(0, this.items.length - this.limit);
    }
    const before = this.lastAt.get(item.modem);
    if (before === undefined || item.receivedAt > before) this.lastAt.set(item.modem, item.receivedAt);
  }

  /** Newest first (copies). */
  list(): RecentSms[] {
    return this.items.map((x) => ({ ...x })).reverse();
  }

  lastReceivedAt(modem: string): string | undefined {
    return this.lastAt.get(modem);
  }
}
