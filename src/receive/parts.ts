/**
 * Multipart parts of one modem: spool each part, split the parts into messages, join a message when it is complete or
 * past the timeout; returns what it wrote. No AT commands; called inside the receiver's scheduler tasks.
 * - Parts never mix (sms/multipart.ts clusterParts); parts of another modem never join nor count as retransmissions.
 * - Ages run on a monotonic clock. Parts of modems `adoptPartsOf` names are joined here with their own SIM identity.
 * - Joined record, then tombstones, then the parts deleted: a crash at any point re-joins to the same record id.
 */
import type { Logger } from '../log.js';
import { partRecordId, smsRecordId } from '../sms/identity.js';
import { clusterParts, joinParts, partGroupKey } from '../sms/multipart.js';
import type { DecodedSms } from '../sms/types.js';
import {
  DEDUPE_MIN_DAYS,
  SPOOL_RECORD_VERSION,
  type PartRecord,
  type SimIdentity,
  type SmsRecord,
} from '../spool/types.js';
import type { ReceiveSpool, Written } from './types.js';
import { writeMessage } from './write.js';

/** The SIM identity record ids derive from: IMSI, else ICCID, else the modem's name. */
export const simKeyOf = (sim: SimIdentity): string => sim.imsi ?? sim.iccid ?? `modem:${sim.modem}`;

/** A new pending SMS record; its id derives from the SMS itself (sms/identity.ts). */
export function newSmsRecord(
  sim: SimIdentity,
  sms: Pick<DecodedSms, 'originator' | 'scTimestamp'>,
  text: string,
  pdus: string[],
  nowMs: number,
): SmsRecord {
  return {
    v: SPOOL_RECORD_VERSION,
    kind: 'sms',
    id: smsRecordId(simKeyOf(sim), sms.originator, sms.scTimestamp, text),
    sim: { ...sim },
    sender: sms.originator,
    text,
    scTimestamp: sms.scTimestamp,
    receivedAt: new Date(nowMs).toISOString(),
    pdus,
    attempts: 0,
  };
}

export interface PartAssemblerOptions {
  spool: Pick<ReceiveSpool, 'putPart' | 'listParts' | 'deleteParts' | 'putPending' | 'putIgnored'>;
  sim: SimIdentity;
  multipartTimeoutMs: number;
  logger: Logger;
  now: () => number;
  monotonic: () => number;
  /** A joined message is pending when its sender is accepted, else archived in ignored. */
  accept: (sender: string) => { accept: boolean };
  adoptPartsOf?: (modem: string) => boolean;
}

/** The joined messages one call wrote, and the error that stopped it (what was written before it stays written). */
export interface Joined {
  written: Written[];
  failed?: unknown;
}

/** A wall clock before this (2024-01-01) is a Pi without RTC that has not synced yet: its ages are not trusted. */
const SANE_CLOCK_MS = Date.UTC(2024, 0, 1);

export class PartAssembler {
  private readonly o: PartAssemblerOptions;
  private readonly log: Logger;
  /** Part and tombstone id -> monotonic ms this process first saw it. */
  private readonly firstSeen = new Map<string, number>();

  constructor(options: PartAssemblerOptions) {
    this.o = options;
    this.log = options.logger;
  }

  /**
   * Spools one part; returns false when it is a retransmission of a part already joined into a message, or already
   * spooled (the caller counts a duplicate). `shared`: a parts listing shared by several concurrent calls (a batch): fetched once, and each new part is
   * added to it before its write starts, so concurrent calls never spool the same part twice.
   */
  async store(sms: DecodedSms, readsAgreed: number, shared?: { snapshot?: Promise<PartRecord[]> }): Promise<boolean> {
    const c = sms.concat!;
    const groupKey = partGroupKey(simKeyOf(this.o.sim), sms.originator, c);
    const modem = this.o.sim.modem;
    let parts: PartRecord[];
    if (shared) {
      shared.snapshot ??= this.o.spool.listParts();
      parts = await shared.snapshot; // from here to putPart() nothing awaits: the check and the push are one step
    } else {
      parts = await this.o.spool.listParts();
    }
    // A family: this modem, this exact sender, this group key. Parts read on another modem are never this modem's,
    // not even as a retransmission, whatever SIM identity that modem reports.
    const family = (p: PartRecord) => p.groupKey === groupKey && p.sim.modem === modem && p.sender === sms.originator;
    // The same part = same family, sequence, text AND service-centre time: a network retransmission keeps its time;
    // a new message that happens to reuse the reference (and even the text) does not.
    const samePart = (p: PartRecord) =>
      family(p) && p.sequence === c.sequence && p.text === sms.text && p.scTimestamp === sms.scTimestamp;
    const tombstone = parts.find((p) => p.consumedBy !== undefined && samePart(p));
    if (tombstone) {
      this.log.info(
        { part: `${c.sequence}/${c.total}`, ref: c.reference, id: tombstone.consumedBy },
        'part already joined into a received message (retransmission): not spooled again',
      );
      return false;
    }
    if (parts.some((p) => p.consumedBy === undefined && samePart(p))) {
      this.log.debug({ part: `${c.sequence}/${c.total}`, ref: c.reference }, 'part already spooled (read twice)');
      return false;
    }
    const part: PartRecord = {
      v: SPOOL_RECORD_VERSION,
      kind: 'part',
      groupKey,
      // Two messages can share a group key and sequence (a reused reference): the id names the part's own message.
      id: partRecordId(groupKey, c.sequence, JSON.stringify([modem, sms.scTimestamp, sms.text])),
      sim: { ...this.o.sim },
      sender: sms.originator,
      sequence: c.sequence,
      total: c.total,
      reference: c.reference,
      referenceBits: c.referenceBits,
      text: sms.text,
      scTimestamp: sms.scTimestamp,
      receivedAt: new Date(this.o.now()).toISOString(),
      pdu: sms.pdu,
      encoding: sms.encoding,
      readsAgreed,
      ...(sms.extraOctets === undefined ? {} : { extraOctets: sms.extraOctets }),
    };
    if (shared) parts.push(part);
    const r = await this.o.spool.putPart(part);
    this.seen(part.id);
    this.log.debug(
      { part: `${c.sequence}/${c.total}`, ref: c.reference, created: r.created },
      'multipart part spooled',
    );
    return true;
  }

  /** Monotonic time this process first saw a part or tombstone (ages never use the wall clock: see the header). */
  private seen(id: string): number {
    let t = this.firstSeen.get(id);
    if (t === undefined) {
      t = this.o.monotonic();
      this.firstSeen.set(id, t);
    }
    return t;
  }

  /** Parts this receiver joins: its own modem's, and those of modems `adoptPartsOf` names (renamed or removed). */
  private isMine(p: PartRecord): boolean {
    return p.sim.modem === this.o.sim.modem || (this.o.adoptPartsOf?.(p.sim.modem) ?? false);
  }

  /**
   * Joins every message that is complete (or, with `expiredToo`, past the timeout); prunes old tombstones.
   * `partsWaiting`: this modem's open parts (absent when the parts could not be listed).
   */
  async assembleAll(expiredToo: boolean): Promise<Joined & { partsWaiting?: number }> {
    const out: Joined & { partsWaiting?: number } = { written: [] };
    try {
      await this.joinAll(expiredToo, out);
    } catch (err) {
      out.failed = err;
    }
    return out;
  }

  /** assembleAll's work; `out` gets partsWaiting once the parts are listed, then each message written. */
  private async joinAll(expiredToo: boolean, out: Joined & { partsWaiting?: number }): Promise<void> {
    const parts = (await this.o.spool.listParts()).filter((p) => this.isMine(p));
    const present = new Set(parts.map((p) => p.id));
    for (const id of this.firstSeen.keys()) if (!present.has(id)) this.firstSeen.delete(id);
    const nowMono = this.o.monotonic();
    // A joined part's tombstone recognises a retransmitted part this long: twice the timeout, at least the dedupe memory.
    const tombstoneLifeMs = Math.max(2 * this.o.multipartTimeoutMs, DEDUPE_MIN_DAYS * 86_400_000);
    // Monotonic age covers clock jumps while running; the wall-clock age (only from a sane clock) lets tombstones of
    // earlier runs expire too, or a daemon restarted more often than the life would keep them for ever.
    const wallNow = this.o.now();
    const wallAge = (p: PartRecord) => {
      const at = Date.parse(p.consumedAt ?? p.receivedAt);
      return at > SANE_CLOCK_MS && wallNow > SANE_CLOCK_MS ? wallNow - at : 0;
    };
    const expiredTombstones = parts.filter(
      (p) =>
        p.consumedBy !== undefined && (nowMono - this.seen(p.id) > tombstoneLifeMs || wallAge(p) > tombstoneLifeMs),
    );
    if (expiredTombstones.length > 0) await this.o.spool.deleteParts(expiredTombstones.map((p) => p.id));
    const open = parts.filter((p) => p.consumedBy === undefined);
    const expired = new Set(expiredTombstones.map((p) => p.id));
    const keyOf = (p: PartRecord) => JSON.stringify([p.sim.modem, p.sender, p.groupKey]);
    const families = new Map<string, PartRecord[]>();
    for (const p of open) {
      this.seen(p.id);
      const key = keyOf(p);
      families.set(key, [...(families.get(key) ?? []), p]);
    }
    const joinedOf = new Map<string, PartRecord[]>();
    for (const p of parts)
      if (p.consumedBy !== undefined && !expired.has(p.id))
        joinedOf.set(keyOf(p), [...(joinedOf.get(keyOf(p)) ?? []), p]);
    out.partsWaiting = open.filter((p) => p.sim.modem === this.o.sim.modem).length;
    for (const [key, list] of families)
      await this.assembleFamily(list, joinedOf.get(key) ?? [], expiredToo ? 'expired' : 'complete', out.written);
  }

  /**
   * After new parts (a batch): joins what their families hold that is complete, each family once, from one parts
   * listing. Families never share a record (one family's join does not change another's), so they are joined
   * concurrently (their writes can share fsyncs); all have settled when this resolves, `failed` is the first error.
   */
  async assembleFamiliesOf(list: DecodedSms[]): Promise<Joined> {
    const written: Written[] = [];
    try {
      await this.joinFamiliesOf(list, written);
      return { written };
    } catch (err) {
      return { written, failed: err };
    }
  }

  private async joinFamiliesOf(list: DecodedSms[], written: Written[]): Promise<void> {
    const simKey = simKeyOf(this.o.sim);
    const modem = this.o.sim.modem;
    const wanted = new Map<string, PartRecord[]>();
    const keyOf = (groupKey: string, sender: string) => `${groupKey}\n${sender}`;
    for (const sms of list) wanted.set(keyOf(partGroupKey(simKey, sms.originator, sms.concat!), sms.originator), []);
    for (const p of await this.o.spool.listParts()) {
      if (p.sim.modem !== modem) continue;
      wanted.get(keyOf(p.groupKey, p.sender))?.push(p);
    }
    const joins = [...wanted.values()].map((family) =>
      this.assembleFamily(
        family.filter((p) => p.consumedBy === undefined),
        family.filter((p) => p.consumedBy !== undefined),
        'complete',
        written,
      ),
    );
    const failed = (await Promise.allSettled(joins)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Splits a family into messages (clusterParts; `joined`, the family's tombstones, tell it whether the reference was
   * reused) and joins each that is complete, or also past the timeout ('expired'). An incomplete message stays open
   * until its own timeout even when a newer message reusing its reference completes first: its late parts still join.
   */
  private async assembleFamily(
    list: PartRecord[],
    joined: PartRecord[],
    when: 'complete' | 'expired',
    written: Written[],
  ): Promise<void> {
    if (list.length === 0) return;
    const byId = new Map(list.map((p) => [p.id, p]));
    const stamp = (p: PartRecord) => {
      const t = Date.parse(p.scTimestamp);
      return Number.isNaN(t) ? 0 : t;
    };
    const clusters = clusterParts(
      list.map((p) => ({ id: p.id, sequence: p.sequence, scTimestampMs: stamp(p), encoding: p.encoding })),
      { seenStampsMs: joined.map(stamp) },
    ).map((c) => c.map((x) => byId.get(x.id)!));
    const total = list[0]!.total;
    const isComplete = (c: PartRecord[]) =>
      joinParts(
        c.map((p) => ({ sequence: p.sequence, text: p.text })),
        total,
      ).complete;
    const complete = clusters.filter(isComplete);
    for (const c of complete) await this.joinMessage(c, written);
    const nowMono = this.o.monotonic();
    for (const c of clusters) {
      if (complete.includes(c)) continue;
      const firstSeen = Math.min(...c.map((p) => this.seen(p.id)));
      if (when === 'expired' && nowMono - firstSeen >= this.o.multipartTimeoutMs) await this.joinMessage(c, written);
    }
  }

  /** Writes the joined record of one message's parts (gap markers for missing ones), then tombstones its parts. */
  private async joinMessage(list: PartRecord[], written: Written[]): Promise<void> {
    const total = list[0]!.total;
    const joined = joinParts(
      list.map((p) => ({ sequence: p.sequence, text: p.text })),
      total,
    );
    const sorted = [...list].sort((a, b) => a.sequence - b.sequence);
    const first = sorted[0]!;
    // The identity of the SIM the parts were read on (an adopted part's modem may be gone): ids do not depend on who joins.
    const rec = newSmsRecord(
      first.sim,
      { originator: first.sender, scTimestamp: first.scTimestamp },
      joined.text,
      sorted.map((p) => p.pdu),
      this.o.now(),
    );
    rec.multipart = {
      reference: first.reference,
      referenceBits: first.referenceBits,
      total,
      received: joined.received,
      complete: joined.complete,
    };
    const reads = sorted.map((p) => p.readsAgreed).filter((n): n is number => n !== undefined);
    if (reads.length === sorted.length) rec.readsAgreed = Math.min(...reads);
    if (sorted.some((p) => p.extraOctets !== undefined))
      rec.extraOctets = sorted.map((p) => p.extraOctets ?? '').join(',');
    // One made-up part makes the message made-up (whoever joins it: an adopted part's modem may be gone or real now).
    const accepted = this.o.accept(first.sender).accept;
    if (!joined.complete) {
      this.log.warn(
        {
          id: rec.id,
          groupKey: first.groupKey,
          modem: first.sim.modem,
          received: joined.received,
          missing: joined.missing,
        },
        `multipart SMS incomplete after ${Math.round(this.o.multipartTimeoutMs / 1000)} s: forwarding the parts received with gap markers`,
      );
    }
    written.push(await writeMessage(this.o.spool, this.log, rec, accepted));
    // Tombstones first, then the parts: a crash in between leaves both, and the next run joins the same record id
    // again (already spooled: not duplicated) before finishing this step.
    const consumedAt = new Date(this.o.now()).toISOString();
    // Tombstone ids name the message too: the same group and sequence can be consumed again by a later message.
    // The tombstones are written concurrently (a spool that groups its commits shares their fsyncs); all of them are
    // durable before any part is deleted.
    await Promise.all(
      list.map(async (p) => {
        const tombstone = { ...p, id: `${p.id}.${rec.id}`, consumedBy: rec.id, consumedAt };
        await this.o.spool.putPart(tombstone);
        this.seen(tombstone.id);
      }),
    );
    await this.o.spool.deleteParts(list.map((p) => p.id));
  }
}
