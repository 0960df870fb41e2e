/**
 * A shared virtual "network" for virtual modems: each virtual SIM is a line with a number, an operator, a balance and
 * an active-until date; the operators are played by operator-play.ts. SMS travel asynchronously (deliveryDelayMs),
 * never inside the AT command that sent them. A transfer outside the network debits and delivers nothing; one to
 * another operator fails. Lines are joined before their modem exists, then connected. Clock and serial numbers are
 * injectable; timers are unref'd and cancelled by close().
 */
import type { OperatorKey } from '../balance/operators.js';
import {
  onSubmittedSms,
  receivedText,
  ussdScriptFor,
  type PendingRequest,
  type PlayLine,
  type TransferOutcome,
} from './operator-play.js';
import type { UssdScript } from './ussd-script.js';
import type { SentMessage, VirtualModem } from './virtual-modem.js';

export interface LineOptions {
  /** 08..., 628... or +628... */
  number: string;
  operator: OperatorKey;
  /** Rupiah. Default 50000. */
  balance?: number;
  /** YYYY-MM-DD. Default 60 days from now. */
  activeUntil?: string;
  /** A balance reply in another wording (tests show variants, e.g. one no pattern matches). */
  balanceText?: (line: PlayLine) => string;
}

export interface NetworkOptions {
  now?: () => Date;
  deliveryDelayMs?: number;
  /** Serial numbers for confirmations (default: operator prefix + date + counter). */
  serial?: (operator: OperatorKey) => string;
  /** Confirmation tokens for SMS flows (default: counter-based, 6 characters). */
  token?: () => string;
}

/** What a virtual modem on this network is built with, and how it is connected afterwards. */
export interface NetworkLine {
  readonly state: PlayLine;
  /** For VirtualModemOptions.ussdMenus. */
  readonly ussdMenus: UssdScript;
  /** For VirtualModemOptions.onSmsSubmitted. */
  readonly onSmsSubmitted: (sent: SentMessage) => void;
  /** For VirtualModemOptions.identity.ownNumber. */
  readonly ownNumber: string;
  /** SMS to this line now reach `vm`. */
  connect(vm: VirtualModem): void;
}

/** 08..., +628..., 628..., 8... -> 628...; undefined when not an Indonesian mobile number. */
export function to62(raw: string): string | undefined {
  const d = raw.trim().replace(/[\s-]/g, '').replace(/^\+/, '');
  if (/^628\d{7,12}$/.test(d)) return d;
  if (/^08\d{7,12}$/.test(d)) return '62' + d.slice(1);
  if (/^8\d{7,12}$/.test(d)) return '62' + d;
  return undefined;
}

const GROUP: Readonly<Record<OperatorKey, string>> = {
  telkomsel: 'telkomsel',
  indosat: 'indosat',
  xl: 'xl',
  axis: 'xl',
  smartfren: 'smartfren',
  tri: 'tri',
};
const NAME: Readonly<Record<OperatorKey, string>> = {
  telkomsel: 'Telkomsel',
  indosat: 'Indosat',
  xl: 'XL',
  axis: 'Axis',
  smartfren: 'Smartfren',
  tri: 'Tri',
};

export class VirtualNetwork {
  private readonly lines = new Map<
    string,
    { state: PlayLine; vm: VirtualModem | undefined; pending: PendingRequest | undefined }
  >();
  private readonly timers = new Set<NodeJS.Timeout>();
  private counter = 0;
  private readonly now: () => Date;

  constructor(private readonly o: NetworkOptions = {}) {
    this.now = o.now ?? (() => new Date());
  }

  join(options: LineOptions): NetworkLine {
    const number = to62(options.number);
    if (!number) throw new RangeError(`${JSON.stringify(options.number)} is not an Indonesian mobile number`);
    if (this.lines.has(number)) throw new RangeError(`number ${number} is already on the network`);
    const network = this;
    const entry: { state: PlayLine; vm: VirtualModem | undefined; pending: PendingRequest | undefined } = {
      state: undefined as unknown as PlayLine,
      vm: undefined,
      pending: undefined,
    };
    const state: PlayLine = {
      operator: options.operator,
      number,
      balance: options.balance ?? 50_000,
      activeUntil: options.activeUntil ?? new Date(this.now().getTime() + 60 * 86_400_000).toISOString().slice(0, 10),
      balanceText: options.balanceText,
      transfer: (to, amount) => network.transfer(state, to, amount),
      receive: (from, text) => network.deliverLater(number, from, text),
    };
    entry.state = state;
    this.lines.set(number, entry);
    return {
      state,
      ussdMenus: ussdScriptFor(state),
      ownNumber: '+' + number,
      onSmsSubmitted: (sent) => {
        if (sent.text === undefined) return;
        const r = onSubmittedSms(state, sent.destination, sent.text, entry.pending, () => this.nextToken());
        entry.pending = r.pending;
        const target = to62(sent.destination);
        if (!r.handled && target) this.deliverLater(target, '+' + number, sent.text);
      },
      connect: (vm) => {
        entry.vm = vm;
      },
    };
  }

  /** The line with this number (any form), for tests and the demo. */
  line(number: string): PlayLine | undefined {
    const n = to62(number);
    return n === undefined ? undefined : this.lines.get(n)?.state;
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private transfer(from: PlayLine, toRaw: string, amount: number): TransferOutcome {
    const to = to62(toRaw);
    if (!to) return { ok: false, reason: `nomor tujuan ${toRaw} tidak valid.` };
    if (to === from.number) return { ok: false, reason: 'tidak dapat mengirim ke nomor sendiri.' };
    if (!Number.isSafeInteger(amount) || amount < 1000) return { ok: false, reason: 'jumlah minimal Rp 1.000.' };
    if (amount > from.balance) return { ok: false, reason: `pulsa Anda tidak cukup. Sisa pulsa Rp${from.balance}.` };
    const target = this.lines.get(to);
    if (target && GROUP[target.state.operator] !== GROUP[from.operator])
      return { ok: false, reason: `nomor tujuan bukan pelanggan ${NAME[from.operator]}.` };
    from.balance -= amount;
    const serial =
      this.o.serial?.(from.operator) ??
      `${from.operator.slice(0, 4).toUpperCase()}${this.now().toISOString().slice(0, 10).replace(/-/g, '')}${String(++this.counter).padStart(6, '0')}`;
    if (target) {
      target.state.balance += amount;
      const [sender, text] = receivedText(
        target.state.operator,
        from.number,
        amount,
        serial,
        this.now().toISOString().slice(0, 10),
      );
      this.deliverLater(to, sender, text);
    }
    return { ok: true, serial };
  }

  private nextToken(): string {
    if (this.o.token) return this.o.token();
    const n = (++this.counter * 7_919 + 104_729) % 2_176_782_336;
    return n.toString(36).toUpperCase().padStart(6, 'K').slice(-6);
  }

  private deliverLater(to62number: string, from: string, text: string): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      const vm = this.lines.get(to62number)?.vm;
      vm?.injectSms({ from, text });
    }, this.o.deliveryDelayMs ?? 50);
    t.unref();
    this.timers.add(t);
  }
}
