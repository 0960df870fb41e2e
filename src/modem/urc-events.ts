/**
 * URC -> modem events: +CMTI 'sms', +CMT 'sms-direct', +CDS/+CDSI 'status-report', the profile's boot banner after init
 * 'reboot', other reset hints 'reset-suspected', storage-full URCs 'storage-full' (+CUSD belongs to the USSD session).
 * No I/O; the clock is injected. Events keep the modem's order. A URC without a usable index or PDU yields no event
 * and an error line (the next sweep finds the SMS). Profiles that report each SMS twice get one event per slot within
 * the duplicate window; forget(index) ends that memory once the slot is deleted.
 */
import type { Urc } from '../at/types.js';
import type { Logger } from '../log.js';
import type { ModemProfile } from './types.js';
import { isHex } from './ussd-codec.js';

export type UrcEvent =
  | { name: 'sms'; info: { storage: string; index: number } }
  | { name: 'sms-direct'; info: { pdu: string; length: number } }
  | { name: 'status-report'; info: { pdu: string; length: number } | { storage: string; index: number } }
  | { name: 'reboot'; info: { urc: string } }
  | { name: 'reset-suspected'; info: { reason: string } }
  | { name: 'storage-full'; info: { urc: string; storage: string | undefined } };

/** What the mapping needs to know about the modem when the URC arrives. */
export interface UrcContext {
  profile: ModemProfile;
  /** Init finished (a boot banner before that is part of the boot, not a restart). */
  initDone: boolean;
  /** The storage init chose: +CMTI without a memory means this one. */
  storage: string | undefined;
  /** URC names that suggest a restart on any family (profiles' ANY_RESET_HINTS); default: the profile's own. */
  resetHints?: readonly string[];
}

export interface UrcEventsOptions {
  log: Logger;
  /** Window in which a repeated +CMTI for the same slot is a duplicate. Default 10 s. */
  duplicateWindowMs?: number;
  /** Milliseconds clock. Default Date.now. */
  now?: () => number;
}

export class UrcEvents {
  private readonly log: Logger;
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly recentIndications = new Map<string, number>();

  constructor(options: UrcEventsOptions) {
    this.log = options.log;
    this.windowMs = options.duplicateWindowMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  map(urc: Urc, ctx: UrcContext): UrcEvent[] {
    const events: UrcEvent[] = [];
    const { profile } = ctx;
    switch (urc.name) {
      case 'cmti': {
        const { storage, index } = urc.data;
        if (typeof index !== 'number' || !Number.isInteger(index)) {
          this.log.error({ lines: urc.lines }, '+CMTI without a usable index; the next poll will find the SMS');
          break;
        }
        const where = typeof storage === 'string' ? storage : (ctx.storage ?? '');
        if (profile.duplicateIndications && this.isDuplicate(`${where}:${index}`)) {
          this.log.debug({ storage: where, index }, 'duplicate +CMTI ignored (device reports each SMS twice)');
          break;
        }
        events.push({ name: 'sms', info: { storage: where, index } });
        break;
      }
      case 'cmt': {
        const { pdu, length } = urc.data;
        if (typeof pdu === 'string' && isHex(pdu) && typeof length === 'number')
          events.push({ name: 'sms-direct', info: { pdu: pdu.toUpperCase(), length } });
        else this.log.error({ lines: urc.lines }, '+CMT without a readable PDU');
        break;
      }
      case 'cds': {
        const { pdu, length } = urc.data;
        if (typeof pdu === 'string' && isHex(pdu) && typeof length === 'number')
          events.push({ name: 'status-report', info: { pdu: pdu.toUpperCase(), length } });
        else this.log.error({ lines: urc.lines }, '+CDS without a readable PDU');
        break;
      }
      case 'cdsi': {
        const { storage, index } = urc.data;
        if (typeof index === 'number')
          events.push({ name: 'status-report', info: { storage: typeof storage === 'string' ? storage : '', index } });
        break;
      }
      default:
        break;
    }
    if (ctx.initDone && profile.rebootUrcs.includes(urc.name)) {
      this.log.warn({ urc: urc.name }, 'modem restarted (boot banner after init); init must run again');
      events.push({ name: 'reboot', info: { urc: urc.name } });
    } else if (ctx.initDone && (ctx.resetHints ?? profile.resetHintUrcs).includes(urc.name)) {
      this.log.info({ urc: urc.name }, 'URC that suggests a restart: checking the modem settings');
      events.push({ name: 'reset-suspected', info: { reason: `unsolicited ${urc.lines[0] ?? urc.name}` } });
    }
    if (profile.storageFullUrcs.includes(urc.name)) {
      const storage = typeof urc.data.storage === 'string' ? urc.data.storage : undefined;
      this.log.warn({ urc: urc.name, storage }, 'SMS storage full');
      events.push({ name: 'storage-full', info: { urc: urc.name, storage } });
    }
    return events;
  }

  /** The slot was deleted: a new indication for it is a new SMS. */
  forget(index: number): void {
    for (const key of this.recentIndications.keys()) if (key.endsWith(`:${index}`)) this.recentIndications.delete(key);
  }

  private isDuplicate(key: string): boolean {
    const now = this.now();
    for (const [k, at] of this.recentIndications) if (now - at > this.windowMs) this.recentIndications.delete(k);
    if (this.recentIndications.has(key)) return true;
    this.recentIndications.set(key, now);
    return false;
  }
}
