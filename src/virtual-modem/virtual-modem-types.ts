/**
 * The public types of the virtual modem (virtual-modem.ts re-exports every one of them, so importers keep importing
 * from there): its constructor options, what an injection returns, what it reports about stored and sent SMS, its
 * CNMI settings, the snapshot of what outlives the simulator process, and the quirk names (VIRTUAL_QUIRKS, its one
 * value). No behaviour and no import that loads code, so `simulate --help` lists the quirks without the simulator.
 */
import type { Logger } from '../log.js';
import type { BuiltPdu, SmsEncoding } from './pdu-builder.js';
import type { SimulatedIdentity, SimProfileId, SimState } from './sim-profiles.js';
import type { UssdScript } from './ussd-script.js';

export interface NoiseOptions {
  /** PRNG seed: the same seed gives the same noise. Default 1. */
  seed?: number;
  /** A noise URC every this many ms while a link is attached. Default 1000; 0 = none periodic. */
  intervalMs?: number;
  /** Chance (0-1) that a noise URC is slipped between a response's lines and its final result. Default 0.25. */
  midResponseProbability?: number;
}

export const VIRTUAL_QUIRKS = [
  'store-in-me',
  'cpin-no-ok',
  'unlisted-error',
  'ussd-release-first',
  'ussd-release-only',
] as const;
export type VirtualQuirk = (typeof VIRTUAL_QUIRKS)[number];

export interface VirtualModemOptions {
  path: string;
  profile?: SimProfileId;
  /** SM storage slots. Default 30. */
  storageCapacity?: number;
  /** First storage index: 1 (27.005 usual) or 0 (some Huawei firmwares). Default 1. */
  indexBase?: 0 | 1;
  /** SIM PIN; when set the SIM starts locked (unless simState says otherwise). */
  pin?: string;
  /** PUK that unlocks a blocked SIM. Default '12345678'. */
  puk?: string;
  simState?: SimState;
  identity?: Partial<SimulatedIdentity>;
  ussdMenus?: UssdScript;
  /** The network's side of AT+CMGS: called after each SMS the modem sent (operator-network.ts routes it). */
  onSmsSubmitted?: (sent: SentMessage) => void;
  /**
   * The form of +CUSD reply strings, overriding the family's (field notes: forms seen from networks and modems):
   * 'ucs2' hex with dcs 72, 'ucs2-dcs15' the same hex labelled dcs 15, 'ascii-hex' hex of the text with dcs 0 (an
   * Indonesian operator menu), 'mislabelled' packed GSM 7-bit hex labelled 8-bit (dcs 68): readable by no rule;
   * TS 23.038 §5 forms: 'ucs2-language' (dcs 17: packed language 'id', then UCS2 hex), 'gsm7-language' (dcs 16:
   * 'id', CR, the text), 'compressed' (dcs 96: compressed GSM 7-bit, which no rule decodes).
   */
  ussdReplyForm?:
    'ucs2' | 'ucs2-dcs15' | 'ascii-hex' | 'mislabelled' | 'ucs2-language' | 'gsm7-language' | 'compressed';
  /**
   * Behaviours of real devices, switched on by name (docs/modems.md names the device of each):
   * 'store-in-me' SM and ME memories, received SMS stored in ME whatever AT+CPMS selected, announced `+CMTI: "ME",n`
   * (Quectel EC25 default, Huawei sticks); 'cpin-no-ok' AT+CPIN? answered without OK (Wavecom, Sierra);
   * 'unlisted-error' unknown commands end with `COMMAND REJECTED`, a result code no table lists;
   * 'ussd-release-first' OK, then `+CUSD: 2,"Initiating Release",15`, then the reply as status 0;
   * 'ussd-release-only' OK, then the release notice and no reply.
   */
  quirks?: readonly VirtualQuirk[];
  /** Report every +CMTI twice (a modem that does so, field note). */
  reportTwice?: boolean;
  /** Spacing of boot banners. Default 5 ms; 0 = all at once. */
  bootStepMs?: number;
  /** Noise URCs: default on for profiles that have noise URCs; false turns them off. */
  noise?: false | NoiseOptions;
  /** Time to wait for AT+CNMA after +CMT. Default 15000 ms. */
  cnmaTimeoutMs?: number;
  /** Delay before every answer, to imitate a slow modem. Default 0. */
  latencyMs?: number;
  /** commandLog() and sentMessages() keep at most this many recent entries (long --simulate runs). Default 10000. */
  historyLimit?: number;
  /** Clock for default SMS time stamps. */
  now?: () => Date;
  logger?: Logger;
}

export interface InjectSmsOptions {
  from: string;
  text: string;
  encoding?: SmsEncoding;
  timestamp?: Date;
  /** Default 28 (+07:00, WIB). */
  tzQuarterHours?: number;
  smsc?: string;
  concatRef?: number;
  concatRefBits?: 8 | 16;
  partsOverride?: string[];
  /** TP-PID (TS 23.040 §9.2.3.9), e.g. 0x40 for a Short Message Type 0; default 0. */
  pid?: number;
  /** TP-DCS octet as sent (class, message waiting groups); `encoding` must be the alphabet it names. */
  dcs?: number;
  /** Delivery order of the parts, 0-based part numbers (e.g. [2, 0, 1]); parts not listed are not delivered. */
  order?: number[];
  /** Deliver every part twice (SMSC retransmission). */
  duplicateParts?: boolean;
  /** 'store' = class-2-like (always stored); 'direct' (default) follows CNMI <mt>. */
  delivery?: 'store' | 'direct';
}

export interface InjectResult {
  /** Storage indexes of the parts stored now, in delivery order. */
  indexes: number[];
  /** The PDUs delivered, in delivery order. */
  pdus: BuiltPdu[];
  /** Parts that wait at the SMSC because the modem cannot take them now. */
  held: number;
}

export interface StoredMessage {
  /** The memory it is in, when the modem has more than SM ('SM', 'ME'). */
  memory?: string;
  index: number;
  /** 0 REC UNREAD, 1 REC READ. */
  stat: 0 | 1;
  pdu: string;
  tpduLength: number;
}

export interface SentMessage {
  mr: number;
  pdu: string;
  tpduLength: number;
  destination: string;
  text: string | undefined;
}

export interface CnmiSettings {
  mode: number;
  mt: number;
  bm: number;
  ds: number;
  bfr: number;
}

/**
 * What outlives the simulator process (`simulate --state FILE`): the SIM (its stored SMS, PIN state and tries) and
 * the network (SMS the SMSC still holds, the next concatenation reference). Volatile modem settings are not in it: a
 * restored modem powers up as after a reboot.
 */
export interface SimSnapshot {
  v: 1;
  slots: Array<{ index: number; stat: 0 | 1; pdu: string; tpduLength: number; memory?: string }>;
  held: Array<{ pdu: string; tpduLength: number; delivery: 'store' | 'direct' }>;
  simState: SimState;
  pinTriesLeft: number;
  concatRef: number;
}
