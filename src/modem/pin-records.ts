/**
 * The records behind "a wrong PIN is tried once, ever" (PURE: entries in, a decision out; sim-unlock.ts and
 * src/state/pin-memory.ts store them). Per SIM key (`iccid:`, `imsi:`, `modem:<name>`) one entry: a salted hash of the
 * PIN (it keeps the PIN out of plain sight, it does not protect it) and when it was rejected or sent unconfirmed;
 * both block a re-send. An attempt is recorded under the strongest key and `modem:<name>`, so a SIM whose ICCID became
 * unreadable is still recognised.
 */
import { createHash } from 'node:crypto';

export interface PinEntry {
  /** sha256(key + NUL + pin), hex. */
  pinHash: string;
  /** When the SIM rejected the PIN (or did not accept it). */
  rejectedAt?: string;
  /** When the PIN was sent and not yet confirmed (cleared when the SIM reaches READY). */
  sentAt?: string;
  /** For a `modem:<name>` entry: the strongest key of the SIM it was made for. */
  sim?: string;
}

export type PinEntries = Record<string, PinEntry>;

/** A PIN sent to this SIM that did not unlock it. */
export interface PinAttempt {
  key: string;
  outcome: 'rejected' | 'unconfirmed';
  at: string;
}

/** The hash kept for a PIN (the key is the salt: the same PIN on two SIMs hashes differently). */
export function pinHash(key: string, pin: string): string {
  return createHash('sha256').update(`${key}\u0000${pin}`).digest('hex');
}

const kind = (key: string): string => key.slice(0, key.indexOf(':') + 1);

/** The keys an attempt is recorded under: the strongest and `modem:<name>` (the last of `keys`). */
export function recordKeys(keys: readonly string[]): string[] {
  return [...new Set([keys[0]!, keys[keys.length - 1]!])];
}

/** The first attempt of `pin` on the SIM known by `keys` (strongest first, `modem:<name>` last) that did not unlock it. */
export function findAttempt(entries: PinEntries, keys: readonly string[], pin: string): PinAttempt | undefined {
  for (const key of keys) {
    const e = entries[key];
    if (!e || e.pinHash !== pinHash(key, pin)) continue;
    if (
      key.startsWith('modem:') &&
      e.sim !== undefined &&
      !keys.includes(e.sim) &&
      keys.some((k) => k !== key && kind(k) === kind(e.sim!))
    )
      continue;
    if (e.rejectedAt !== undefined) return { key, outcome: 'rejected', at: e.rejectedAt };
    if (e.sentAt !== undefined) return { key, outcome: 'unconfirmed', at: e.sentAt };
  }
  return undefined;
}

/** The entries to set for an attempt of `pin` on the SIM known by `keys`, now. */
export function attemptEntries(
  keys: readonly string[],
  pin: string,
  outcome: 'sent' | 'rejected',
  now: string,
): PinEntries {
  const strongest = keys[0]!;
  const out: PinEntries = {};
  for (const key of recordKeys(keys)) {
    out[key] = {
      pinHash: pinHash(key, pin),
      ...(outcome === 'rejected' ? { rejectedAt: now } : { sentAt: now }),
      ...(key !== strongest ? { sim: strongest } : {}),
    };
  }
  return out;
}
