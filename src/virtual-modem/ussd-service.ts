/**
 * The virtual modem's USSD (3GPP TS 27.007 §7.15): AT+CUSD and ATD<code> driving a scripted menu (ussd-script.ts),
 * reading the request and writing the reply in the family's form. Sending needs the network, else +CME ERROR;
 * unreadable hex is +CME ERROR: 50. A reboot ends the session (reset()). No I/O and no timers here.
 */
import { OK, type ErrorSpec, type Outcome } from './at-command.js';
import { fromHex, pack, packUssdHex, toHex, toSeptets, unpackUssdHex } from './septets.js';

/** ISO 639 code of Indonesian: the language a language-indicating reply form names. */
const USSD_LANGUAGE = 'id';
import type { SimProfile } from './sim-profiles.js';
import { continueUssd, startUssd, type UssdMenu, type UssdScript } from './ussd-script.js';
import type { VirtualModemOptions } from './virtual-modem-types.js';

export interface UssdHost {
  readonly profile: SimProfile;
  readonly script: UssdScript;
  /** The options the modem was built with (ussdReplyForm is read at each use). */
  readonly opts: Pick<VirtualModemOptions, 'ussdReplyForm'>;
  /** The AT+CSCS character set now. */
  cscs(): string;
  /** The error to answer when the modem cannot reach the network now (SIM, registration), else undefined. */
  networkBlocked(): ErrorSpec | undefined;
}

function ucs2Hex(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) out += text.charCodeAt(i).toString(16).padStart(4, '0');
  return out.toUpperCase();
}

function fromUcs2Hex(hex: string): string | undefined {
  const bytes = fromHex(hex);
  if (!bytes || bytes.length % 2 !== 0) return undefined;
  let out = '';
  for (let i = 0; i < bytes.length; i += 2) out += String.fromCharCode(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  return out;
}

export class UssdService {
  private session: UssdMenu | undefined;
  private n = 0;

  constructor(private readonly host: UssdHost) {}

  /** The AT+CUSD <n> setting (result code presentation). */
  get cusdN(): number {
    return this.n;
  }

  /** Power-up state: no session, presentation off. */
  reset(): void {
    this.n = 0;
    this.session = undefined;
  }

  cusd(n: number, str: string | undefined, o: { dialled?: boolean } = {}): Outcome {
    if (n === 2) {
      this.session = undefined;
      return OK;
    }
    this.n = n;
    if (str === undefined) return OK;
    const blocked = this.host.networkBlocked();
    if (blocked) return { error: blocked };
    const profile = this.host.profile;
    const input = o.dialled
      ? str
      : profile.ussdPackedHex
        ? unpackUssdHex(str)
        : this.host.cscs() === 'UCS2'
          ? fromUcs2Hex(str)
          : str;
    if (input === undefined) return { error: { cme: 50 } };
    const step = this.session ? continueUssd(this.session, input) : startUssd(this.host.script, input);
    this.session = step.session;
    if (n === 0) return OK; // result code presentation disabled
    const urc =
      step.reply.status === 4 || step.reply.text === undefined
        ? `+CUSD: ${step.reply.status}`
        : `+CUSD: ${step.reply.status},${this.encode(step.reply.text)}`;
    return profile.cusdBeforeOk ? { beforeFinal: [urc] } : { afterFinal: [urc] };
  }

  /** `"<text>",<dcs>` in the form asked for (ussdReplyForm), else the family's: packed GSM7 hex (15), UCS2 hex (72), or plain text (15). */
  private encode(text: string): string {
    switch (this.host.opts.ussdReplyForm) {
      case 'ucs2':
        return `"${ucs2Hex(text)}",72`;
      case 'ucs2-dcs15':
        return `"${ucs2Hex(text)}",15`;
      case 'ascii-hex':
        return `"${Buffer.from(text, 'latin1').toString('hex').toUpperCase()}",0`;
      case 'mislabelled':
        return `"${packUssdHex(text)}",68`;
      case 'ucs2-language':
        // TS 23.038 §5, DCS 0x11: the language as two packed GSM 7-bit characters (two octets), then UCS2.
        return `"${toHex(pack(toSeptets(USSD_LANGUAGE) ?? []))}${ucs2Hex(text)}",17`;
      case 'gsm7-language':
        // DCS 0x10: the language, a CR, then the text.
        const prefixed = `${USSD_LANGUAGE}\r${text}`;
        return this.host.profile.ussdPackedHex ? `"${packUssdHex(prefixed)}",16` : `"${prefixed}",16`;
      case 'compressed':
        // DCS 0x60: compressed GSM 7-bit (TS 23.042); the octets stand for data no decoder here can read.
        return `"${packUssdHex(text)}",96`;
      default:
        break;
    }
    if (this.host.profile.ussdPackedHex && toSeptets(text)) return `"${packUssdHex(text)}",15`;
    if (this.host.profile.ussdPackedHex || this.host.cscs() === 'UCS2') return `"${ucs2Hex(text)}",72`;
    return `"${text}",15`;
  }
}
