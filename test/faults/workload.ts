/**
 * The SMS a fault trial sends: a seeded, reproducible mix of what the operators send (GSM 7-bit with and without the
 * extension table, UCS2 with emoji, multipart of both, numeric short codes and alphanumeric senders, line breaks and
 * double spaces) plus a few from a private number the filter must not forward. PURE: same seed, same messages.
 * Every text carries a unique tag, so two SMS never share (sender, text, timestamp) and the record ids differ.
 */
import { prng } from '../../src/virtual-modem/prng.js';

export interface TrialSms {
  from: string;
  text: string;
  /** A 16-bit concatenation reference unique within the trial (the simulator process may restart mid-trial). */
  concatRef: number;
  /** false: the sender filter must archive it, never POST it. */
  accepted: boolean;
}

export const ACCEPTED_SENDERS = ['858', '168', 'TELKOMSEL', 'Indosat', 'AXIS3'] as const;
export const PRIVATE_SENDER = '+6281299990000';

/** Small deterministic PRNG (src/virtual-modem/prng.ts): the same sequence from the same seed. */
export { prng };

export const pick = <T>(rng: () => number, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
export const between = (rng: () => number, lo: number, hi: number): number => Math.floor(lo + rng() * (hi - lo + 1));

const digits = (rng: () => number, n: number): string =>
  Array.from({ length: n }, () => String(between(rng, 0, 9))).join('');

const LONG_GSM7 =
  'Anda mendapatkan penambahan pulsa Rp {amt} dari nomor 62{num} tgl {date}. Pulsa akan aktif dalam beberapa saat. ' +
  'Cek pulsa melalui *888# atau aplikasi MyTelkomsel. Info lebih lanjut hubungi CS 188. Terima kasih telah menggunakan ' +
  'layanan kami; nikmati promo bonus kuota 2GB (berlaku 7 hari) untuk setiap transfer di atas Rp 50.000.';
const LONG_UCS2 =
  'Selamat! 🎉 Pulsa Rp {amt} dari 62{num} telah masuk ✓. Bonus: kuota malam 1GB 🌙, nelpon sesama 60 menit 📞. ' +
  'Cek di *888# — info CS 188 ☎️. Terima kasih 🙏';

/** `count` SMS for one trial run. */
export function makeWorkload(seed: number, count: number, tag: string): TrialSms[] {
  const rng = prng(seed);
  const out: TrialSms[] = [];
  for (let i = 0; i < count; i++) {
    const id = `#${tag}-${i}`;
    const amt = pick(rng, ['5.000', '10.000', '25.000', '50.000', '100.000']);
    const num = digits(rng, 10);
    const date = `2026-${String(between(rng, 1, 12)).padStart(2, '0')}-${String(between(rng, 1, 28)).padStart(2, '0')}`;
    const fill = (t: string): string => t.replace('{amt}', amt).replace('{num}', num).replace('{date}', date);
    const accepted = rng() >= 0.05;
    const from = accepted ? pick(rng, ACCEPTED_SENDERS) : PRIVATE_SENDER;
    const kind = between(rng, 0, 5);
    const text = [
      () => `Anda mendapatkan penambahan pulsa Rp ${amt} dari nomor 62${num} tgl ${date}. ${id}`,
      () => `Saldo {bonus} [${amt}] ~ 100€ ^ | \\ SN:${num} ${id}`,
      () => `${fill(LONG_GSM7)} ${id}`,
      () => `Terima kasih 🙏 pulsa Rp ${amt} masuk ✓ dari 62${num} ${id}`,
      () => `${fill(LONG_UCS2)} ${id}`,
      () => `Transfer Rp ${amt}\nke 62${num}  berhasil.\nSN:  ${digits(rng, 12)} ${id}`,
    ][kind]!();
    out.push({ from, text, concatRef: ((seed * 131 + i) % 65_535) + 1, accepted });
  }
  return out;
}

/** The simulator's `inject` command for one SMS (16-bit concatenation reference, so it cannot repeat). */
export function injectLine(sms: TrialSms): string {
  return `inject ${JSON.stringify({ from: sms.from, text: sms.text, concatRef: sms.concatRef, concatRefBits: 16 })}`;
}
