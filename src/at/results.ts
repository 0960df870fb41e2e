/**
 * Final result codes (PURE): the generic table every modem shares, and the texts of common +CME / +CMS error codes
 * (3GPP TS 27.007 section 9.2, TS 27.005 section 3.2.5). Profiles add their own rows through the channel.
 * Invariants: lines are matched trimmed; a row's `code` returns the numeric CME/CMS code, also for the verbose text
 * form (`+CME ERROR: SIM not inserted` -> 10) when the text is one we know.
 */
import type { FinalResultEntry } from './types.js';

const CME_TEXT: ReadonlyMap<number, string> = new Map([
  [0, 'phone failure'],
  [1, 'no connection to phone'],
  [2, 'phone adaptor link reserved'],
  [3, 'operation not allowed'],
  [4, 'operation not supported'],
  [5, 'PH-SIM PIN required'],
  [6, 'PH-FSIM PIN required'],
  [7, 'PH-FSIM PUK required'],
  [10, 'SIM not inserted'],
  [11, 'SIM PIN required'],
  [12, 'SIM PUK required'],
  [13, 'SIM failure'],
  [14, 'SIM busy'],
  [15, 'SIM wrong'],
  [16, 'incorrect password'],
  [17, 'SIM PIN2 required'],
  [18, 'SIM PUK2 required'],
  [20, 'memory full'],
  [21, 'invalid index'],
  [22, 'not found'],
  [23, 'memory failure'],
  [24, 'text string too long'],
  [25, 'invalid characters in text string'],
  [26, 'dial string too long'],
  [27, 'invalid characters in dial string'],
  [30, 'no network service'],
  [31, 'network timeout'],
  [32, 'network not allowed, emergency calls only'],
  [40, 'network personalisation PIN required'],
  [100, 'unknown'],
  [103, 'illegal MS'],
  [106, 'illegal ME'],
  [107, 'GPRS services not allowed'],
  [111, 'PLMN not allowed'],
  [112, 'location area not allowed'],
  [113, 'roaming not allowed in this location area'],
  [132, 'service option not supported'],
  [133, 'requested service option not subscribed'],
  [134, 'service option temporarily out of order'],
  [148, 'unspecified GPRS error'],
  [149, 'PDP authentication failure'],
  [150, 'invalid mobile class'],
]);

const CMS_TEXT: ReadonlyMap<number, string> = new Map([
  // 0..127: network causes (TS 24.011 annex E-2)
  [1, 'unassigned (unallocated) number'],
  [8, 'operator determined barring'],
  [10, 'call barred'],
  [21, 'short message transfer rejected'],
  [27, 'destination out of service'],
  [28, 'unidentified subscriber'],
  [29, 'facility rejected'],
  [30, 'unknown subscriber'],
  [38, 'network out of order'],
  [41, 'temporary failure'],
  [42, 'congestion'],
  [47, 'resources unavailable'],
  [50, 'requested facility not subscribed'],
  [69, 'requested facility not implemented'],
  [81, 'invalid short message transfer reference value'],
  [95, 'invalid message, unspecified'],
  [96, 'invalid mandatory information'],
  [97, 'message type non-existent or not implemented'],
  [98, 'message not compatible with short message protocol state'],
  [99, 'information element non-existent or not implemented'],
  [111, 'protocol error, unspecified'],
  [127, 'interworking, unspecified'],
  // 128..255: TP-FCS values (TS 23.040)
  [128, 'telematic interworking not supported'],
  [129, 'short message type 0 not supported'],
  [130, 'cannot replace short message'],
  [143, 'unspecified TP-PID error'],
  [144, 'data coding scheme not supported'],
  [145, 'message class not supported'],
  [159, 'unspecified TP-DCS error'],
  [160, 'command cannot be actioned'],
  [161, 'command unsupported'],
  [175, 'unspecified TP-Command error'],
  [176, 'TPDU not supported'],
  [192, 'SC busy'],
  [193, 'no SC subscription'],
  [194, 'SC system failure'],
  [195, 'invalid SME address'],
  [196, 'destination SME barred'],
  [197, 'SM rejected, duplicate SM'],
  [198, 'TP-VPF not supported'],
  [199, 'TP-VP not supported'],
  [208, 'SIM SMS storage full'],
  [209, 'no SMS storage capability in SIM'],
  [210, 'error in MS'],
  [211, 'memory capacity exceeded'],
  [212, 'SIM application toolkit busy'],
  [213, 'SIM data download error'],
  [255, 'unspecified error cause'],
  // 300..: ME / TA errors (TS 27.005)
  [300, 'ME failure'],
  [301, 'SMS service of ME reserved'],
  [302, 'operation not allowed'],
  [303, 'operation not supported'],
  [304, 'invalid PDU mode parameter'],
  [305, 'invalid text mode parameter'],
  [310, 'SIM not inserted'],
  [311, 'SIM PIN required'],
  [312, 'PH-SIM PIN required'],
  [313, 'SIM failure'],
  [314, 'SIM busy'],
  [315, 'SIM wrong'],
  [316, 'SIM PUK required'],
  [317, 'SIM PIN2 required'],
  [318, 'SIM PUK2 required'],
  [320, 'memory failure'],
  [321, 'invalid memory index'],
  [322, 'memory full'],
  [330, 'SMSC address unknown'],
  [331, 'no network service'],
  [332, 'network timeout'],
  [340, 'no +CNMA acknowledgement expected'],
  [500, 'unknown error'],
]);

/** Text of a +CME ERROR code, or undefined when we do not know it. */
export function describeCme(code: number): string | undefined {
  return CME_TEXT.get(code);
}

/** Text of a +CMS ERROR code; codes from 512 up are manufacturer specific. */
export function describeCms(code: number): string | undefined {
  const known = CMS_TEXT.get(code);
  if (known !== undefined) return known;
  if (code >= 512) return 'manufacturer-specific error';
  return undefined;
}

function normaliseText(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9+]+/g, ' ')
    .trim();
}

function reverse(map: ReadonlyMap<number, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [code, text] of map) if (!out.has(normaliseText(text))) out.set(normaliseText(text), code);
  return out;
}

const CME_BY_TEXT = reverse(CME_TEXT);
const CMS_BY_TEXT = reverse(CMS_TEXT);

/** The code after `+CME ERROR:` / `+CMS ERROR:`: numeric, or a verbose text we recognise. */
function errorCode(line: string, byText: Map<string, number>): number | undefined {
  const rest = /^\+CM[ES] ERROR:?\s*(.*)$/i.exec(line.trim())?.[1]?.trim() ?? '';
  if (/^\d+$/.test(rest)) return Number(rest);
  if (rest === '') return undefined;
  return byText.get(normaliseText(rest));
}

/**
 * Every line that ends a command, success and error: the standards' forms and the vendor forms real devices send,
 * each with the device that sends it and where that is written down. A matching line ends the command at once.
 */
export const FINAL_RESULTS: readonly FinalResultEntry[] = [
  { pattern: /^OK$/, ok: true, device: 'every modem', source: 'ITU-T V.250 5.7.1' },
  { pattern: /^ERROR$/, ok: false, device: 'every modem', source: 'ITU-T V.250 5.7.1' },
  {
    pattern: /^\+CME ERROR\b/i,
    ok: false,
    code: (line) => errorCode(line, CME_BY_TEXT),
    device: 'every 27.007 modem (numeric with AT+CMEE=1, text with =2)',
    source: '3GPP TS 27.007 9.2',
  },
  {
    pattern: /^\+CMS ERROR\b/i,
    ok: false,
    code: (line) => errorCode(line, CMS_BY_TEXT),
    device: 'every 27.005 modem (SMS commands)',
    source: '3GPP TS 27.005 3.2.5',
  },
  {
    pattern: /^NO CARRIER$/,
    ok: false,
    device: 'every modem (call or data ended; Sierra omits the leading CR)',
    source: 'ITU-T V.250 5.7.1; ModemManager mm_call_end_regex_get()',
  },
  { pattern: /^NO DIALTONE$/, ok: false, device: 'every modem (voice dial)', source: 'ITU-T V.250 5.7.1' },
  { pattern: /^BUSY$/, ok: false, device: 'every modem (voice dial)', source: 'ITU-T V.250 5.7.1' },
  { pattern: /^NO ANSWER$/, ok: false, device: 'every modem (voice dial)', source: 'ITU-T V.250 5.7.1' },
  {
    pattern: /^CONNECT\b/,
    ok: true,
    device: 'every modem (a data call: the bridge never dials one)',
    source: 'ITU-T V.250 5.7.1; ModemManager mm-serial-parsers.c regex_connect',
  },
  // Vendor forms.
  {
    pattern: /^COMMAND NOT SUPPORT$/i,
    ok: false,
    device: 'Huawei E1752, E220, E173 (unknown command)',
    source: 'python-gsmmodem test/fakemodems.py HuaweiE1752; gammu atgen.c; ModemManager regex_unknown_error',
  },
  {
    pattern: /^MODEM ERROR:?\s*\d*$/i,
    ok: false,
    code: (line) => numericCode(line),
    device: 'Motorola A1200 / EZX phones',
    source: 'gammu protocol/at/at.c StatusStrings; ModemManager regex_ezx_error',
  },
  {
    pattern: /^NA$/,
    ok: false,
    device: 'Samsung Z810 (not available)',
    source: 'ModemManager mm-serial-parsers.c regex_na',
  },
  {
    pattern: /^ABORTED$/i,
    ok: false,
    device: 'modems that abort a command on a character sent meanwhile (u-blox, gammu ERR_ABORTED)',
    source: 'gammu libgammu/gsmcomon.c',
  },
  {
    pattern: /^TOO MANY PARAMETERS$/,
    ok: false,
    device: 'kept from the earlier table; no public capture names the device',
    source: 'none found',
  },
];

function numericCode(line: string): number | undefined {
  const m = /(\d+)\s*$/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/**
 * A line that looks like a final result code nobody listed: upper-case words, optionally `: <code>`
 * (`SIM BUSY`, `FAIL`, `CMD ERR: 3`), not a `+`/`^`/`$` information response, not a number or hex. The channel
 * takes it as an error final when the modem stays quiet after it (an unknown kind is logged once).
 */
export function looksLikeFinal(line: string): boolean {
  const text = line.trim();
  if (text.length < 2 || text.length > 40) return false;
  return /^[A-Z][A-Z ]*[A-Z](?::\s*-?\d+)?$/.test(text) && /[A-Z]{2}/.test(text);
}

/** The kind of a final-looking line, for logging once per kind (`CMD ERR: 3` and `CMD ERR: 4` are one kind). */
export function finalKind(line: string): string {
  return line.trim().replace(/\d+/g, 'N');
}

export interface FinalResultMatch {
  entry: FinalResultEntry;
  ok: boolean;
  errorCode: number | undefined;
}

/**
 * First row of `table` matching the (trimmed) line, with its error code. Rows bound to a command (`command`) match only
 * while `command` (the one in flight) starts with it.
 */
export function matchFinalResult(
  line: string,
  table: readonly FinalResultEntry[] = FINAL_RESULTS,
  command?: string,
): FinalResultMatch | undefined {
  const text = line.trim();
  for (let i = 0; i < table.length; i++) {
    const entry = table[i]!;
    if (
      entry.command !== undefined &&
      (command === undefined || !command.toUpperCase().startsWith(entry.command.toUpperCase()))
    )
      continue;
    if (entry.pattern.test(text)) {
      let code: number | undefined;
      try {
        code = entry.code?.(text);
      } catch {
        code = undefined; // a profile's extractor choked on odd text: the line is still a final result
      }
      return { entry, ok: entry.ok, errorCode: code };
    }
  }
  return undefined;
}

/**
 * The final line as an operator reads it: the modem's words, plus the meaning of a numeric CME/CMS code, e.g.
 * `+CMS ERROR: 321 (invalid memory index)`. Verbose forms are returned as they are.
 */
export function explainFinal(line: string): string {
  const text = line.trim();
  const m = /^\+(CME|CMS) ERROR:?\s*(\d+)$/i.exec(text);
  if (!m) return text;
  const code = Number(m[2]);
  const desc = m[1]?.toUpperCase() === 'CME' ? describeCme(code) : describeCms(code);
  return desc === undefined ? text : `${text} (${desc})`;
}
