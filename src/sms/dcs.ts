/**
 * Data coding schemes of 3GPP TS 23.038: §4 (SMS, TP-DCS) and §5 (CBS, and USSD, which uses the same octet). PURE.
 * Every one of the 256 values of each table maps to one answer: an alphabet, or 'compressed' (the bridge has no
 * decompressor, so such text is refused by name, never shown as garbage), plus what the octet says beside it: message
 * class, message waiting indication, language. Reserved values are read as the GSM 7-bit default alphabet, as both
 * sections require of a receiving entity. Names are the specification's.
 */

export type DcsAlphabet = 'gsm7' | '8bit' | 'ucs2';

export type MessageWaitingKind = 'voicemail' | 'fax' | 'email' | 'other';

export interface SmsDcs {
  /** 'compressed': TS 23.038 §4 bit 5 of the general data coding groups (compression of TS 23.042). */
  alphabet: DcsAlphabet | 'compressed';
  /** Alphabet of the text inside the compression, when compressed. */
  compressedAlphabet?: DcsAlphabet;
  /** 0 flash (shown at once), 1 ME-specific, 2 (U)SIM-specific, 3 TE-specific; absent when the DCS gives none. */
  messageClass?: 0 | 1 | 2 | 3;
  /** Groups 01xx: the message is marked for automatic deletion after it is read. */
  autoDelete?: true;
  /**
   * Groups 1100-1110: a message waiting indication. `store` false (1100 "Discard Message"): the ME may discard the text
   * and present only the indication; true (1101, 1110 "Store Message"): the text is stored as normal.
   */
  waiting?: { kind: MessageWaitingKind; active: boolean; store: boolean };
  /** A reserved value or bit, read as the spec says (GSM 7-bit); the text of a warning. */
  reserved?: string;
}

const WAITING_KINDS: readonly MessageWaitingKind[] = ['voicemail', 'fax', 'email', 'other'];

/** `0x0C`-style hex of one octet. */
export function octetHex(value: number): string {
  return `0x${value.toString(16).padStart(2, '0').toUpperCase()}`;
}

function generalAlphabet(bits: number): DcsAlphabet | undefined {
  return bits === 0 ? 'gsm7' : bits === 1 ? '8bit' : bits === 2 ? 'ucs2' : undefined;
}

/** TS 23.038 §4: the TP-DCS octet of an SMS. */
export function smsDcs(dcs: number): SmsDcs {
  const hex = octetHex(dcs);
  const group = dcs >> 4;
  if (group <= 0x7) {
    // 00xx xxxx general data coding; 01xx xxxx the same, marked for automatic deletion.
    const alphabet = generalAlphabet((dcs >> 2) & 0x03);
    const out: SmsDcs = { alphabet: alphabet ?? 'gsm7' };
    if (alphabet === undefined) out.reserved = `DCS ${hex}: reserved alphabet (bits 3-2 = 11), read as GSM 7-bit`;
    if (dcs & 0x10) out.messageClass = (dcs & 0x03) as 0 | 1 | 2 | 3;
    if (group >= 0x4) out.autoDelete = true;
    if (dcs & 0x20) {
      out.compressedAlphabet = out.alphabet as DcsAlphabet;
      out.alphabet = 'compressed';
    }
    return out;
  }
  if (group <= 0xb) return { alphabet: 'gsm7', reserved: `DCS ${hex}: reserved coding group, read as GSM 7-bit` };
  if (group <= 0xe) {
    const waiting = { kind: WAITING_KINDS[dcs & 0x03]!, active: (dcs & 0x08) !== 0, store: group !== 0xc };
    const out: SmsDcs = { alphabet: group === 0xe ? 'ucs2' : 'gsm7', waiting };
    if (dcs & 0x04) out.reserved = `DCS ${hex}: reserved bit 2 of a message waiting group set (ignored)`;
    return out;
  }
  // 1111 xxxx: data coding / message class; bit 3 reserved.
  const out: SmsDcs = { alphabet: dcs & 0x04 ? '8bit' : 'gsm7', messageClass: (dcs & 0x03) as 0 | 1 | 2 | 3 };
  if (dcs & 0x08) out.reserved = `DCS ${hex}: reserved bit 3 of group 1111 set (ignored)`;
  return out;
}

export interface CbsDcs {
  alphabet: DcsAlphabet | 'compressed';
  compressedAlphabet?: DcsAlphabet;
  /** ISO 639 code the DCS names (groups 0000 and 0010), e.g. 'en'; absent when unspecified or reserved. */
  language?: string;
  /**
   * The text itself starts with its language (0001 0000: two GSM 7-bit characters and a CR; 0001 0001: two GSM
   * 7-bit characters packed in two octets before the UCS2 text).
   */
  languagePrefix?: 'gsm7' | 'ucs2';
  /** Group 1001: the data begins with a user data header. */
  udh?: true;
  messageClass?: 0 | 1 | 2 | 3;
  /** Group 1110: WAP Forum data (WAP-259-WDP); shown as hex. */
  wap?: true;
  reserved?: string;
}

/** Group 0000 (bits 3-0) and group 0010 (0-4), TS 23.038 §5. */
const LANGUAGES_0000 = ['de', 'en', 'it', 'fr', 'es', 'nl', 'sv', 'da', 'pt', 'fi', 'no', 'el', 'tr', 'hu', 'pl'];
const LANGUAGES_0010 = ['cs', 'he', 'ar', 'ru', 'is'];

/** TS 23.038 §5: the data coding scheme of a cell broadcast message or of a USSD string. */
export function cbsDcs(dcs: number): CbsDcs {
  const hex = octetHex(dcs);
  const group = dcs >> 4;
  const low = dcs & 0x0f;
  if (group === 0x0) return low === 0xf ? { alphabet: 'gsm7' } : { alphabet: 'gsm7', language: LANGUAGES_0000[low]! };
  if (group === 0x1) {
    if (low === 0) return { alphabet: 'gsm7', languagePrefix: 'gsm7' };
    if (low === 1) return { alphabet: 'ucs2', languagePrefix: 'ucs2' };
    return { alphabet: 'gsm7', reserved: `DCS ${hex}: reserved value of group 0001, read as GSM 7-bit` };
  }
  if (group === 0x2) {
    const language = LANGUAGES_0010[low];
    if (language !== undefined) return { alphabet: 'gsm7', language };
    return { alphabet: 'gsm7', reserved: `DCS ${hex}: reserved language of group 0010, read as GSM 7-bit` };
  }
  if (group === 0x3) {
    return { alphabet: 'gsm7', reserved: `DCS ${hex}: reserved language group 0011, read as GSM 7-bit` };
  }
  if (group <= 0x7 || group === 0x9) {
    // 01xx: general data coding (bit 5 compressed, bit 4 class meaning); 1001: the same alphabets, with a UDH.
    const alphabet = generalAlphabet((dcs >> 2) & 0x03);
    const out: CbsDcs = { alphabet: alphabet ?? 'gsm7' };
    if (alphabet === undefined) out.reserved = `DCS ${hex}: reserved alphabet (bits 3-2 = 11), read as GSM 7-bit`;
    if (group === 0x9) {
      out.udh = true;
      out.messageClass = (dcs & 0x03) as 0 | 1 | 2 | 3;
      return out;
    }
    if (dcs & 0x10) out.messageClass = (dcs & 0x03) as 0 | 1 | 2 | 3;
    if (dcs & 0x20) {
      out.compressedAlphabet = out.alphabet as DcsAlphabet;
      out.alphabet = 'compressed';
    }
    return out;
  }
  if (group === 0xe) return { alphabet: '8bit', wap: true };
  if (group === 0xf) {
    // 1111: bit 3 reserved, bit 2 coding (GSM 7-bit / 8-bit data), bits 1-0 class (00 = no class).
    const out: CbsDcs = { alphabet: dcs & 0x04 ? '8bit' : 'gsm7' };
    if (dcs & 0x03) out.messageClass = (dcs & 0x03) as 1 | 2 | 3;
    if (dcs & 0x08) out.reserved = `DCS ${hex}: reserved bit 3 of group 1111 set (ignored)`;
    return out;
  }
  return { alphabet: 'gsm7', reserved: `DCS ${hex}: reserved coding group, read as GSM 7-bit` };
}

/** One line for an operator: what a USSD/CBS DCS says, e.g. 'UCS2 with a language indication'. */
export function describeCbsDcs(dcs: number): string {
  const d = cbsDcs(dcs);
  const names: Record<CbsDcs['alphabet'], string> = {
    gsm7: 'GSM 7-bit',
    '8bit': '8-bit data',
    ucs2: 'UCS2',
    compressed: 'compressed',
  };
  const compressed = `compressed ${names[d.compressedAlphabet ?? 'gsm7']} (not decodable)`;
  let text = d.alphabet === 'compressed' ? compressed : names[d.alphabet];
  if (d.wap) text = 'WAP Forum data';
  if (d.languagePrefix) text += ' with a language indication';
  if (d.language) text += `, language ${d.language}`;
  if (d.udh) text += ' with a user data header';
  if (d.reserved) text += ' (reserved value)';
  return text;
}
