/**
 * Scripted USSD menus for the virtual modem (the network side of AT+CUSD, 3GPP TS 27.007 §7.15).
 *
 * A script is an ordered list of rules; the first rule whose `code` matches the dialled string opens a session.
 * A menu with status 1 ("further user action required") keeps the session open: the next AT+CUSD string is looked
 * up in `replies` (falling back to `otherwise`). Status 0 ends the session, 2 = ended by the network, 4 = not supported.
 *
 * Contract (PURE apart from the state a script author keeps in closures, e.g. a balance): `startUssd` /
 * `continueUssd` return the reply to show and the menu the session now waits on (undefined = session closed).
 */

export type UssdStatus = 0 | 1 | 2 | 4;

export interface UssdMenu {
  status: UssdStatus;
  /** Shown to the user; absent for status 4. */
  text?: string;
  /** For status 1: the user's answer -> next menu (or a function building it, run only when chosen). */
  replies?: Readonly<Record<string, UssdMenu | (() => UssdMenu)>>;
  /** For status 1: the answer matched no entry of `replies`. Default: status 2 "invalid input" message. */
  otherwise?: UssdMenu;
}

export interface UssdRule {
  /** A literal code (compared case-insensitively, spaces ignored) or a pattern whose groups the menu builder gets. */
  code: string | RegExp;
  menu: UssdMenu | ((match: RegExpMatchArray) => UssdMenu);
}

export type UssdScript = readonly UssdRule[];

export interface UssdStep {
  reply: { status: UssdStatus; text?: string };
  /** The menu the session now waits on; undefined when the session is closed. */
  session: UssdMenu | undefined;
}

const NOT_SUPPORTED: UssdStep = { reply: { status: 4 }, session: undefined };
const INVALID_INPUT: UssdMenu = { status: 2, text: 'Maaf, operasi gagal karena format pesan yang tidak valid.' };

function step(menu: UssdMenu): UssdStep {
  const reply = menu.text === undefined ? { status: menu.status } : { status: menu.status, text: menu.text };
  return { reply, session: menu.status === 1 ? menu : undefined };
}

/** Opens a session for a dialled code; unknown codes answer status 4. */
export function startUssd(script: UssdScript, code: string): UssdStep {
  const dialled = code.trim();
  for (const rule of script) {
    let match: RegExpMatchArray | null;
    if (typeof rule.code === 'string') {
      match =
        rule.code.replace(/\s+/g, '').toLowerCase() === dialled.replace(/\s+/g, '').toLowerCase() ? [dialled] : null;
    } else {
      match = dialled.match(rule.code);
    }
    if (!match) continue;
    return step(typeof rule.menu === 'function' ? rule.menu(match) : rule.menu);
  }
  return NOT_SUPPORTED;
}

/** The user's answer in an open session. */
export function continueUssd(session: UssdMenu, answer: string): UssdStep {
  const next = session.replies?.[answer.trim()];
  if (next === undefined) return step(session.otherwise ?? INVALID_INPUT);
  return step(typeof next === 'function' ? next() : next);
}

export interface DefaultUssdOptions {
  /** Starting credit in rupiah (the balance menu and transfers use it). Default 24025. */
  balance?: number;
  ownNumber?: string;
  /** The clock the active period follows: it ends 60 days after the moment the menu is asked (never expired). */
  now?: () => Date;
}

/** `dd/mm/yyyy` of the day 60 days from now: the default active period's end. */
export function defaultActiveUntil(now: Date = new Date()): string {
  const d = new Date(now.getTime() + 60 * 86_400_000);
  return `${String(d.getDate()).padStart(2, '0')}/${String(d.getMonth() + 1).padStart(2, '0')}/${d.getFullYear()}`;
}

/**
 * A Telkomsel-like script: `*888#` balance menu, `*858*<number>*<amount>#` credit transfer with a confirmation step
 * (the balance goes down on success), `*858#` malformed request. Anything else answers status 4.
 */
export function defaultUssdScript(options: DefaultUssdOptions = {}): UssdScript {
  let balance = options.balance ?? 24025;
  const ownNumber = options.ownNumber ?? '6281234567890';
  return [
    {
      code: '*888#',
      menu: () => ({
        status: 1,
        text: `Sisa pulsa Rp.${balance}.Aktif sd ${defaultActiveUntil(options.now?.())}.\n1.Beli Paket\n2.Info Kartu`,
        replies: {
          '1': { status: 0, text: 'Maaf, layanan belum tersedia.' },
          '2': { status: 0, text: `Nomor Anda ${ownNumber}` },
        },
      }),
    },
    {
      code: /^\*858\*(\d{6,15})\*(\d{1,7})#$/,
      menu: (m) => {
        const target = m[1] ?? '';
        const amount = Number(m[2]);
        return {
          status: 1,
          text: `Kirim pulsa Rp${amount} ke ${target}? 1.Ya 2.Tidak`,
          replies: {
            '1': () => {
              if (amount > balance)
                return { status: 0, text: `Maaf, pulsa Anda tidak cukup. Sisa pulsa Rp${balance}.` };
              balance -= amount;
              return {
                status: 0,
                text: `Transfer berhasil. Pulsa Rp${amount} telah dikirim ke ${target}. Sisa pulsa Rp${balance}.`,
              };
            },
            '2': { status: 0, text: 'Transfer pulsa dibatalkan.' },
          },
        };
      },
    },
    { code: '*858#', menu: INVALID_INPUT },
  ];
}
