/**
 * PURE: the messages the peer benchmark injects, and the seeded pauses between single messages. No I/O, no timers.
 *
 * Every text starts with a tag (`#W001`, `#L007`, `#B012`) so a POST body maps back to the message it carries, even
 * when a peer joins parts in a different order. The burst mixes what an operator really sends: 20 single GSM 7-bit
 * messages, 5 long GSM 7-bit ones (2 and 3 parts, one with escape-table characters such as the euro sign across a
 * part boundary) and 5 UCS2 ones (curly quotes, a check mark, an emoji: single, 2 and 3 parts) - 39 parts in all
 * with the virtual modem's splitting (the count actually delivered is reported by the caller).
 */
import { prng } from '../../src/virtual-modem/prng.js';

export type SmsKind = 'gsm7' | 'gsm7-long' | 'ucs2' | 'ucs2-long';

export interface PlannedSms {
  tag: string;
  kind: SmsKind;
  text: string;
}

export const SENDER = '858';

/** `#L007`: phase letter and a 3-digit number. */
export function tagFor(phase: 'W' | 'L' | 'B', n: number): string {
  return `#${phase}${String(n).padStart(3, '0')}`;
}

/** The tag a received message starts with, if any. */
export function tagOf(message: string): string | undefined {
  return /^#[WLB]\d{3}\b/.exec(message)?.[0];
}

/** A typical Telkomsel transfer confirmation (GSM 7-bit, one part). */
export function singleText(tag: string, n: number): string {
  return `${tag} Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2026-11-22. Cek pulsa *888#. SN: 2611${String(n).padStart(6, '0')}`;
}

const PROMO =
  'Selamat! Pulsa Rp 10.000 dari 6281234567890 telah masuk ke nomor Anda pada 22/11/2026 10:15 WIB. Sisa pulsa Anda Rp 25.350, aktif s/d 21/12/2026. ' +
  'Nikmati paket internet 3GB hanya Rp 15.000 berlaku 7 hari, tekan *363# sekarang juga. Info lebih lanjut hubungi 188 atau kunjungi www.telkomsel.com. ';

/** GSM 7-bit text long enough for `parts` parts (153 septets per part). */
function longGsm7(tag: string, parts: 2 | 3, withEscapes: boolean): string {
  const body = withEscapes ? `${PROMO}Harga {promo} [terbatas] ~ 5 € per hari | hemat^2 \\ ${PROMO}` : PROMO + PROMO;
  const target = parts === 2 ? 250 : 400;
  let text = `${tag} ${body}`;
  while (text.length < target) text += ` ${PROMO}`;
  return text.slice(0, target).trimEnd() + '.';
}

const UCS2_SHORT = [
  'Pulsa Rp 5.000 berhasil ditambahkan ✓ “Terima kasih”',
  'Bonus kuota 1GB aktif 🎉 s/d 30/11',
  'Transfer pulsa ‘Rp 2.000’ diterima — SN: 7731',
];
const UCS2_LONG =
  '“Transfer pulsa” Rp 20.000 dari 6281234567890 berhasil ✓ — sisa pulsa Rp 41.500, masa aktif s/d 21/12/2026. Balas ‘STOP’ untuk berhenti menerima info promo ini. Terima kasih telah menggunakan layanan kami ☺';

/** UCS2 text of 1 part (short) or `parts` parts (67 UCS2 units per part). */
function ucs2(tag: string, variant: number, parts: 1 | 2 | 3): string {
  if (parts === 1) return `${tag} ${UCS2_SHORT[variant % UCS2_SHORT.length]}`;
  const units = parts === 2 ? 110 : 180;
  return `${tag} ${UCS2_LONG}`.slice(0, units).trimEnd();
}

/** The 30-message burst (see the header); `count` other than 30 repeats the same 6-message pattern. */
export function burstPlan(count: number): PlannedSms[] {
  const out: PlannedSms[] = [];
  let ucs2Seen = 0;
  let longSeen = 0;
  for (let i = 0; i < count; i++) {
    const tag = tagFor('B', i + 1);
    if (i % 6 === 1) {
      const parts = longSeen % 5 === 2 ? 3 : 2;
      out.push({ tag, kind: 'gsm7-long', text: longGsm7(tag, parts, longSeen % 5 === 3) });
      longSeen++;
    } else if (i % 6 === 4) {
      const parts = ([1, 2, 1, 3, 1] as const)[ucs2Seen % 5]!;
      out.push({ tag, kind: parts === 1 ? 'ucs2' : 'ucs2-long', text: ucs2(tag, ucs2Seen, parts) });
      ucs2Seen++;
    } else out.push({ tag, kind: 'gsm7', text: singleText(tag, i + 1) });
  }
  return out;
}

/** Small deterministic PRNG (src/virtual-modem/prng.ts): the same sequence from the same seed. */
export { prng };

/** The AT command's name without its arguments: `AT+CMGR=3` -> `AT+CMGR`, `AT+CPMS?` -> `AT+CPMS?`, `ATE1` -> `ATE1`. */
export function commandName(line: string): string {
  const m = /^(AT[+^$&%#*]?[A-Z0-9]*)(\?|=\?)?/i.exec(line.trim());
  return m ? `${m[1]!.toUpperCase()}${m[2] ?? ''}` : line.trim().slice(0, 12);
}

/** Counts by command name, most frequent first. */
export function commandHistogram(lines: readonly string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const l of lines) {
    const name = commandName(l);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}
