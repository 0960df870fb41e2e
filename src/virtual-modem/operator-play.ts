/**
 * The operator's side of a virtual SIM, per operator family: what its balance code answers, how a credit transfer is
 * asked for (USSD menu or SMS to a short code) and the SMS the sender and receiver get, worded as in field-notes.md.
 * PURE apart from the line's state, reached only through the PlayLine it is given. Every confirmation carries the
 * amount, the sender's number and `SN:` (what the convert-pulsa server matches an order on). A transfer larger than the
 * balance fails and moves nothing.
 */
import type { OperatorKey } from '../balance/operators.js';
import type { UssdMenu, UssdScript } from './ussd-script.js';

/** What a play needs of its line (operator-network.ts implements it). */
export interface PlayLine {
  readonly operator: OperatorKey;
  /** International form without '+', 628... */
  readonly number: string;
  balance: number;
  /** YYYY-MM-DD */
  activeUntil: string;
  /** Moves credit to `to` (any form); the network delivers the receiver's confirmation SMS. */
  transfer(to: string, amount: number): TransferOutcome;
  /** An SMS from the operator's short code (or anyone) to this line. */
  receive(from: string, text: string): void;
  /** The balance reply text override (tests show variants), else the family's wording. */
  readonly balanceText: ((line: PlayLine) => string) | undefined;
}

export type TransferOutcome = { ok: true; serial: string } | { ok: false; reason: string };

/** 24025 -> '24.025' */
export function dotted(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '.');
}

/** 2026-08-28 -> `28/08/2026` (sep '/'), `28-08-2026`, `28.08.2026`. */
function dmy(iso: string, sep: string): string {
  const [y, m, d] = iso.split('-');
  return `${d}${sep}${m}${sep}${y}`;
}

const MONTHS_ID = ['Jan', 'Feb', 'Mar', 'Apr', 'Mei', 'Jun', 'Jul', 'Agu', 'Sep', 'Okt', 'Nov', 'Des'];

/** Each family's balance wording (field-notes.md and the variants operators use). */
export const BALANCE_TEXT: Readonly<Record<OperatorKey, (l: PlayLine) => string>> = {
  telkomsel: (l) => `Sisa pulsa Rp.${l.balance}.Aktif sd ${dmy(l.activeUntil, '/')}.\n1.Beli Paket\n2.Info Kartu`,
  xl: (l) => `Pulsa Rp ${dotted(l.balance)}, aktif s.d. ${dmy(l.activeUntil, '-')}.\n1.Paket Internet\n2.Info`,
  axis: (l) => {
    const [y, m, d] = l.activeUntil.split('-');
    return `Sisa pulsa Rp${dotted(l.balance)} aktif sampai ${Number(d)} ${MONTHS_ID[Number(m) - 1]} ${y}. Cek kuota *123#`;
  },
  indosat: (l) => `Pulsa Anda Rp ${dotted(l.balance)},- Berlaku s/d ${dmy(l.activeUntil, '.')}. Info: 185`,
  smartfren: (l) => `Saldo: Rp ${String(l.balance).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} Exp: ${l.activeUntil}`,
  tri: (l) => `Pulsa Rp ${l.balance}. Masa aktif ${dmy(l.activeUntil, '/')}. Bonus 0MB`,
};

/** The balance code each family answers (the same defaults as src/balance/operators.ts, kept apart: sim is the oracle). */
export const BALANCE_CODES: Readonly<Record<OperatorKey, string>> = {
  telkomsel: '*888#',
  xl: '*123#',
  axis: '*888#',
  indosat: '*555#',
  smartfren: '*999#',
  tri: '*111#',
};

/** The confirmation SMS the receiving line gets: [sender id, text]. */
export function receivedText(
  op: OperatorKey,
  from62: string,
  amount: number,
  serial: string,
  date: string,
): [string, string] {
  switch (op) {
    case 'telkomsel':
      return [
        '858',
        `Anda mendapatkan penambahan pulsa Rp ${amount} dari nomor ${from62} tgl ${date}. SN: ${serial}. Cek pulsa melalui *888#`,
      ];
    case 'indosat':
      return ['151', `${from62} mentransfer pulsa sebesar Rp ${dotted(amount)} tgl ${dmy(date, '/')}. SN: ${serial}`];
    case 'xl':
    case 'axis':
      return [
        '168',
        `Nikmati kuota harian, cek *123#. Anda menerima Pulsa dari ${from62} sebesar Rp${amount}. SN: ${serial}`,
      ];
    case 'smartfren':
      return ['879', `Anda menerima pulsa Rp ${dotted(amount)} dari ${from62}. SN: ${serial}`];
    case 'tri':
      return ['3', `Anda menerima pulsa Rp ${dotted(amount)} dari ${from62}. SN: ${serial}`];
  }
}

function outcomeText(l: PlayLine, to: string, amount: number, r: TransferOutcome): string {
  return r.ok
    ? `Transfer pulsa Rp${amount} ke ${to} berhasil. SN: ${r.serial}. Sisa pulsa Rp${l.balance}.`
    : `Maaf, transfer pulsa gagal: ${r.reason}`;
}

/** The USSD side of a line: its balance code, and (Telkomsel) `*858*<to>*<amount>#` then `1`. */
export function ussdScriptFor(l: PlayLine): UssdScript {
  const balanceMenu = (): UssdMenu => {
    const text = (l.balanceText ?? BALANCE_TEXT[l.operator])(l);
    // Menus (a numbered list after the balance) wait for an answer; a plain reply ends the session.
    return /\n\d\./.test(text)
      ? {
          status: 1,
          text,
          replies: {
            '1': { status: 0, text: 'Maaf, layanan belum tersedia.' },
            '2': () => ({ status: 0, text: `Nomor Anda ${l.number}` }),
          },
        }
      : { status: 0, text };
  };
  const script: UssdScript[number][] = [{ code: BALANCE_CODES[l.operator], menu: balanceMenu }];
  if (l.operator === 'telkomsel') {
    script.push({
      code: /^\*858\*(\d{6,15})\*(\d{1,9})#$/,
      menu: (m) => {
        const to = m[1] ?? '';
        const amount = Number(m[2]);
        return {
          status: 1,
          text: `Kirim pulsa Rp${amount} ke ${to}? 1.Ya 2.Tidak`,
          replies: {
            '1': () => ({ status: 0, text: outcomeText(l, to, amount, l.transfer(to, amount)) }),
            '2': { status: 0, text: 'Transfer pulsa dibatalkan.' },
          },
        };
      },
    });
    script.push({
      code: '*858#',
      menu: { status: 2, text: 'Maaf, operasi gagal karena format pesan yang tidak valid.' },
    });
  }
  return script;
}

/** The SMS-flow state of one line: a request waiting for its confirmation. */
export interface PendingRequest {
  to: string;
  amount: number;
  token?: string;
}

/**
 * An SMS this line sent to `dest`: the operator's short code answers per family (Indosat `TRANSFERPULSA` -> token ->
 * `OK<token>`, XL/Axis `BAGI` -> `Y`, Smartfren `KIRIM.<to>.<amount>`). Returns the new pending request (or undefined),
 * and whether the SMS was for the operator at all (false: the network delivers it as a person-to-person SMS).
 */
export function onSubmittedSms(
  l: PlayLine,
  dest: string,
  text: string,
  pending: PendingRequest | undefined,
  token: () => string,
): { handled: boolean; pending: PendingRequest | undefined } {
  const body = text.trim();
  const code = dest.replace(/^\+/, '');
  if (l.operator === 'indosat' && code === '151') {
    const req = /^TRANSFERPULSA\s+(\d{6,15})\s+(\d{1,9})$/i.exec(body);
    if (req) {
      const t = token();
      l.receive(
        '151',
        `Anda akan mentransfer pulsa Rp ${dotted(Number(req[2]))} ke ${req[1]}. Balas OK ${t} ke 151 dalam 5 menit untuk konfirmasi.`,
      );
      return { handled: true, pending: { to: req[1]!, amount: Number(req[2]), token: t } };
    }
    const ok = /^OK\s?([A-Z0-9]{4,12})$/i.exec(body);
    if (ok && pending?.token !== undefined && ok[1]!.toUpperCase() === pending.token) {
      l.receive('151', outcomeText(l, pending.to, pending.amount, l.transfer(pending.to, pending.amount)));
      return { handled: true, pending: undefined };
    }
    l.receive(
      '151',
      ok
        ? 'Maaf, kode konfirmasi salah atau sudah kedaluwarsa.'
        : 'Format salah. Ketik TRANSFERPULSA <nomor> <jumlah> kirim ke 151.',
    );
    return { handled: true, pending };
  }
  if ((l.operator === 'xl' || l.operator === 'axis') && code === '168') {
    const req = /^BAGI\s+(\d{6,15})\s+(\d{1,9})$/i.exec(body);
    if (req) {
      l.receive(
        '168',
        `Anda akan mengirim pulsa Rp${Number(req[2])} ke ${req[1]}. Balas Y untuk melanjutkan atau N untuk membatalkan.`,
      );
      return { handled: true, pending: { to: req[1]!, amount: Number(req[2]) } };
    }
    if (/^Y$/i.test(body) && pending) {
      l.receive('168', outcomeText(l, pending.to, pending.amount, l.transfer(pending.to, pending.amount)));
      return { handled: true, pending: undefined };
    }
    l.receive(
      '168',
      /^N$/i.test(body) ? 'Transfer pulsa dibatalkan.' : 'Format salah. Ketik BAGI <nomor> <jumlah> kirim ke 168.',
    );
    return { handled: true, pending: undefined };
  }
  if (l.operator === 'smartfren' && code === '879') {
    const req = /^KIRIM\.(\d{6,15})\.(\d{1,9})$/i.exec(body);
    const amount = Number(req?.[2]);
    l.receive(
      '879',
      req
        ? outcomeText(l, req[1]!, amount, l.transfer(req[1]!, amount))
        : 'Format salah. Ketik KIRIM.<nomor>.<jumlah> kirim ke 879.',
    );
    return { handled: true, pending: undefined };
  }
  return { handled: false, pending };
}
