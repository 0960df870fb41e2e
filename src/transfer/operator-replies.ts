/**
 * What an operator's reply to a credit transfer says (PURE), read from its words: `confirmed` (the transfer went),
 * `refused` with the reason (no credit, a daily or amount limit, a busy system, a wrong format, number or PIN),
 * `asks` (a two-step flow: a menu or an SMS asking to confirm, or carrying the token), or `unknown`: a reply that
 * matches nothing known, which a run shows verbatim and never counts as success. A refusal wins over a confirmation
 * word in the same text ("berhasil" inside "tidak berhasil"). Wordings: Indonesian and English, any case.
 */

export type ReplyVerdict =
  { kind: 'confirmed' } | { kind: 'refused'; reason: string } | { kind: 'asks' } | { kind: 'unknown' };

/** Refusals, most specific first: [pattern, the reason shown]. */
const REFUSED: ReadonlyArray<[RegExp, string]> = [
  [
    /(pulsa|saldo|balance)\b[^.]{0,40}\b(tidak|tdk|kurang)\s+(mencukupi|cukup)|\binsufficient\b|\bnot enough (credit|balance)\b/i,
    'insufficient balance',
  ],
  [
    /\b(batas|limit)\b[^.]{0,40}\b(harian|hari ini|per hari|transfer|maksimal|maximum|tercapai|terlampaui)|\bmelebihi\b[^.]{0,30}\b(batas|limit)|\bdaily limit\b|\bexceed(s|ed)?\b[^.]{0,20}\blimit\b/i,
    'a transfer limit was reached',
  ],
  [
    /\b(minimal|minimum|min\.)\b[^.]{0,30}\b(transfer|nominal|rp)|\bnominal\b[^.]{0,30}\btidak\s+(valid|sesuai|diperbolehkan)/i,
    'the amount is not allowed',
  ],
  [
    /\b(sistem|system|layanan|service)\b[^.]{0,30}\b(sibuk|busy|gangguan|unavailable|maintenance)|\bcoba (lagi|kembali)\b[^.]{0,20}\b(nanti|beberapa saat)|\btry again later\b/i,
    'the operator is busy',
  ],
  [/\bpin\b[^.]{0,20}\b(salah|tidak valid|invalid|wrong|incorrect)/i, 'a wrong PIN'],
  [
    /\bkode\b[^.]{0,30}\b(salah|kedaluwarsa|kadaluarsa|expired|tidak valid)|\b(code|token)\b[^.]{0,20}\b(invalid|expired|wrong)/i,
    'a wrong or expired confirmation code',
  ],
  [
    /\bnomor\b[^.]{0,30}\b(tujuan\s+)?(salah|tidak valid|tidak terdaftar|tidak aktif|tidak dikenal)|\binvalid (number|destination|msisdn)\b/i,
    'the destination number is not valid',
  ],
  [/\bformat\b[^.]{0,40}\b(salah|tidak valid|invalid|keliru)|\bformat pesan\b/i, 'a wrong format'],
  [
    /\b(tidak|tdk)\s+(berhasil|dapat diproses|bisa diproses)|\bgagal\b|\bfailed\b|\bditolak\b|\brejected\b|\bdibatalkan\b|\bcancell?ed\b/i,
    'the operator says it failed',
  ],
];

/** A transfer that went. */
const CONFIRMED =
  /\b(berhasil|sukses|success(ful)?|telah (di)?kirim|telah ditransfer|sudah (di)?kirim|has been sent|transferred)\b/i;

/** A step of a two-step flow: a menu, a question, a token to send back. */
const ASKS =
  /\b(balas|ketik|reply|kirim)\b[^.]{0,40}\b(y|ya|ok|yes|1)\b|\bkonfirmasi\b|\bconfirm\b|\?\s*(1\.|$)|\b1\.\s*(ya|yes|setuju|lanjut)/i;

/** The verdict on one reply's text (see the header). */
export function judgeReply(text: string): ReplyVerdict {
  for (const [re, reason] of REFUSED) if (re.test(text)) return { kind: 'refused', reason };
  if (CONFIRMED.test(text)) return { kind: 'confirmed' };
  if (ASKS.test(text)) return { kind: 'asks' };
  return { kind: 'unknown' };
}
