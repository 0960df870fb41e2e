/**
 * The generic (3GPP TS 27.005 / 27.007) unsolicited result codes, as rows of the AT channel's URC table, with
 * parsers. A profile's rows come first (buildUrcTable), so a vendor row can override a generic one.
 * PURE. Invariants: every parser accepts what its pattern matched and never throws (unparsable fields are left out);
 * rows that are also the answer to a query carry `responseTo` so the answer is not stolen from the command.
 * Not URCs: NO CARRIER / BUSY / NO ANSWER are final results (the AT channel's table).
 */
import type { UrcEntry } from '../at/types.js';
import type { ModemProfile } from './types.js';
import { parseCusdLine } from './ussd-codec.js';

function num(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

function unquote(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  return t.startsWith('"') && t.endsWith('"') && t.length >= 2 ? t.slice(1, -1) : t;
}

/** Splits `a,"b,c",d` on commas outside quotes. */
export function splitFields(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) quoted = !quoted;
    else if (c === 0x2c && !quoted) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out;
}

function afterColon(line: string): string {
  const i = line.indexOf(':');
  return i < 0 ? '' : line.slice(i + 1).trim();
}

/** `+CMTI: "SM",3` -> { storage, index } (also +CDSI). */
function parseStorageIndex(lines: string[]): Record<string, unknown> {
  const [storage, index] = splitFields(afterColon(lines[0] ?? ''));
  return { storage: unquote(storage), index: num(index) };
}

/** Unsolicited +CREG/+CEREG/+CGREG: `<stat>[,<lac>,<ci>[,<AcT>]]`. */
function parseRegUrc(lines: string[]): Record<string, unknown> {
  const f = splitFields(afterColon(lines[0] ?? ''));
  const data: Record<string, unknown> = { stat: num(f[0]) };
  if (f[1] !== undefined) data.lac = unquote(f[1]);
  if (f[2] !== undefined) data.ci = unquote(f[2]);
  if (f[3] !== undefined) data.act = num(f[3]);
  return data;
}

const banner = (name: string, text: string, description: string): UrcEntry => ({
  name,
  pattern: new RegExp(`^${text}$`, 'i'),
  description,
});

export const GENERIC_URCS: readonly UrcEntry[] = Object.freeze([
  {
    name: 'cmti',
    pattern: /^\+CMTI:\s*"?[A-Z]{2}"?\s*,\s*\d+/i,
    parse: parseStorageIndex,
    description: 'new SMS stored: +CMTI: "SM",3',
  },
  {
    name: 'cmt',
    // <alpha> may be quoted and hold commas (a phonebook name "Doe, John"; found by test/fuzz).
    pattern: /^\+CMT:\s*(?:"[^"]*"|[^,"]*)\s*,\s*\d+\s*$/i,
    extraLines: 1,
    parse: (lines) => {
      const f = splitFields(afterColon(lines[0] ?? ''));
      return { alpha: unquote(f[0]) || undefined, length: num(f[f.length - 1]), pdu: (lines[1] ?? '').trim() };
    },
    description: 'SMS delivered directly (PDU mode): +CMT: [<alpha>],<length> then the PDU line; needs AT+CNMA',
  },
  {
    name: 'cds',
    pattern: /^\+CDS:\s*\d+\s*$/i,
    extraLines: 1,
    parse: (lines) => ({ length: num(afterColon(lines[0] ?? '')), pdu: (lines[1] ?? '').trim() }),
    description: 'status report delivered directly (PDU mode): +CDS: <length> then the PDU line',
  },
  {
    name: 'cdsi',
    pattern: /^\+CDSI:\s*"?[A-Z]{2}"?\s*,\s*\d+/i,
    parse: parseStorageIndex,
    description: 'status report stored: +CDSI: "SR",1',
  },
  {
    name: 'cusd',
    pattern: /^\+CUSD:\s*\d/i,
    // Only the query AT+CUSD? is answered with +CUSD: <n>; the reply to AT+CUSD=1,... is unsolicited.
    responseTo: ['AT+CUSD?'],
    // The quoted string may hold CR/LF: the channel hands over the first line; `complete` says whether it closed.
    parse: (lines) => {
      const c = parseCusdLine(lines[0] ?? '');
      return c
        ? { status: c.status, payload: c.payload, dcs: c.dcs, complete: c.complete, raw: lines[0] }
        : { raw: lines[0] };
    },
    description: 'USSD reply or network-initiated USSD: +CUSD: <m>[,"<str>"[,<dcs>]]',
  },
  { name: 'ring', pattern: /^RING$/i, description: 'incoming call' },
  {
    name: 'clip',
    pattern: /^\+CLIP:/i,
    responseTo: ['AT+CLIP'],
    parse: (lines) => {
      const f = splitFields(afterColon(lines[0] ?? ''));
      return { number: unquote(f[0]), type: num(f[1]) };
    },
    description: 'caller id of an incoming call',
  },
  banner('rdy', 'RDY', 'module (re)started'),
  banner('sms-ready', 'SMS Ready', 'SMS service ready after boot'),
  banner('call-ready', 'Call Ready', 'call service ready after boot'),
  banner('sms-done', 'SMS DONE', 'SMS initialisation done after boot'),
  banner('pb-done', 'PB DONE', 'phonebook initialisation done after boot'),
  {
    name: 'cfun',
    pattern: /^\+CFUN:\s*\d+/i,
    responseTo: ['AT+CFUN'],
    parse: (lines) => ({ fun: num(afterColon(lines[0] ?? '')) }),
    description: 'functionality level banner at boot: +CFUN: 1',
  },
  {
    name: 'cpin',
    pattern: /^\+CPIN:/i,
    responseTo: ['AT+CPIN'],
    parse: (lines) => ({ state: afterColon(lines[0] ?? '') }),
    description: 'SIM state banner at boot or on SIM change: +CPIN: READY',
  },
  {
    // Telit (no vendor profile: detected as generic): SIM status once AT#QSS=1 is set; the query answer is `#QSS: n,m`.
    name: 'qss',
    pattern: /^#QSS:\s*[0-3]$/i,
    responseTo: ['AT#QSS'],
    parse: (lines) => ({ status: num(afterColon(lines[0] ?? '')) }),
    description: 'Telit SIM status: #QSS: 0 removed, 1 inserted, 2 unlocked, 3 ready',
  },
  {
    name: 'creg',
    pattern: /^\+CREG:/i,
    responseTo: ['AT+CREG'],
    parse: parseRegUrc,
    description: 'CS registration change',
  },
  {
    name: 'cereg',
    pattern: /^\+CEREG:/i,
    responseTo: ['AT+CEREG'],
    parse: parseRegUrc,
    description: 'EPS registration change',
  },
  {
    name: 'cgreg',
    pattern: /^\+CGREG:/i,
    responseTo: ['AT+CGREG'],
    parse: parseRegUrc,
    description: 'GPRS registration change',
  },
]);

/** The table to install on the channel for a profile: its rows first, then the generic ones. */
export function buildUrcTable(profile: Pick<ModemProfile, 'urcs'>): UrcEntry[] {
  return [...profile.urcs, ...GENERIC_URCS];
}
