/**
 * The virtual modem's SMS memories ("SM" always, "ME" when `memories` names it) and the 27.005 commands on them:
 * AT+CPMS, AT+CMGL, AT+CMGR, AT+CMGD (PDU mode only). `capacity` slots shown from `indexBase` (0 or 1); a message
 * lands in the lowest free slot, a full storage takes nothing (put() answers undefined). Received SMS go to mem3, or
 * always to `receiveIn` when set. An empty slot reads as a bare OK (SIM800); out of range is +CMS ERROR: 321.
 * Storage lives on the SIM: a reboot resets nothing. No I/O and no timers here.
 */
import { buildDeliverPdus, type BuiltPdu } from './pdu-builder.js';
import { OK, type Outcome } from './at-command.js';
import type { StoredMessage } from './virtual-modem-types.js';

interface Slot {
  stat: 0 | 1;
  pdu: string;
  tpduLength: number;
}

export type MemoryName = 'SM' | 'ME';

export class SmsStorage {
  private readonly memories = new Map<string, (Slot | undefined)[]>();
  /** AT+CPMS: read/delete, write, receive. Power-up: SM everywhere. */
  private mem: [string, string, string] = ['SM', 'SM', 'SM'];

  constructor(
    readonly capacity: number,
    readonly indexBase: 0 | 1,
    private readonly options: { memories?: readonly MemoryName[]; receiveIn?: MemoryName } = {},
  ) {
    for (const m of new Set<string>([
      'SM',
      ...(options.memories ?? []),
      ...(options.receiveIn ? [options.receiveIn] : []),
    ])) {
      this.memories.set(m, new Array<Slot | undefined>(capacity).fill(undefined));
    }
  }

  /** The memories this modem has ('SM' first). */
  names(): string[] {
    return [...this.memories.keys()];
  }

  /** Volatile selection back to power-up (a reboot). */
  resetSelection(): void {
    this.mem = ['SM', 'SM', 'SM'];
  }

  private get slots(): (Slot | undefined)[] {
    return this.memories.get(this.mem[0])!;
  }

  private receiving(): { name: string; slots: (Slot | undefined)[] } {
    const name = this.options.receiveIn ?? this.mem[2];
    return { name, slots: this.memories.get(name)! };
  }

  /** Messages in the memory new SMS go to. */
  used(): number {
    return this.receiving().slots.filter(Boolean).length;
  }

  hasFree(): boolean {
    return this.receiving().slots.includes(undefined);
  }

  /** The memory the last put() used, for the +CMTI. */
  lastMemory = 'SM';

  /** Stores an unread message in the lowest free slot of the receiving memory; its index, or undefined when full. */
  put(built: BuiltPdu): number | undefined {
    const { name, slots } = this.receiving();
    const free = slots.findIndex((s) => s === undefined);
    if (free < 0) return undefined;
    slots[free] = { stat: 0, pdu: built.pdu, tpduLength: built.tpduLength };
    this.lastMemory = name;
    return free + this.indexBase;
  }

  /** Every stored message, of every memory (`memory` set when the modem has more than SM). */
  stored(): StoredMessage[] {
    const out: StoredMessage[] = [];
    for (const [name, slots] of this.memories) {
      slots.forEach((slot, i) => {
        if (!slot) return;
        const m: StoredMessage = {
          index: i + this.indexBase,
          stat: slot.stat,
          pdu: slot.pdu,
          tpduLength: slot.tpduLength,
        };
        if (this.memories.size > 1) m.memory = name;
        out.push(m);
      });
    }
    return out;
  }

  /** Replaces the whole storage; every message keeps its index (and memory: SM when none is named). */
  restore(
    messages: ReadonlyArray<{ index: number; stat: 0 | 1; pdu: string; tpduLength: number; memory?: string }>,
  ): void {
    for (const slots of this.memories.values()) slots.fill(undefined);
    for (const m of messages) {
      const slots = this.memories.get(m.memory ?? 'SM');
      if (!slots) throw new RangeError(`stored SMS in memory ${m.memory} that this modem does not have`);
      const i = m.index - this.indexBase;
      if (i < 0 || i >= this.capacity)
        throw new RangeError(`stored SMS at index ${m.index} does not fit a storage of ${this.capacity}`);
      slots[i] = { stat: m.stat, pdu: m.pdu, tpduLength: m.tpduLength };
    }
  }

  /** Fills every free slot with a read message from a number (storage full scenarios). */
  fill(): void {
    const slots = this.receiving().slots;
    slots.forEach((slot, i) => {
      if (slot) return;
      const [built] = buildDeliverPdus({
        originator: '+6281300000000',
        text: `filler ${i + this.indexBase}`,
        timestamp: new Date(Date.UTC(2026, 0, 1)),
        tzQuarterHours: 28,
      });
      if (built) slots[i] = { stat: 1, ...built };
    });
  }

  cpmsSet(args: string): Outcome {
    const mems = args.split(',').map((s) => s.trim().replace(/^"|"$/g, '').toUpperCase());
    if (mems.length > 3 || mems.some((m) => !this.memories.has(m))) return { error: { cms: 302 } };
    mems.forEach((m, i) => (this.mem[i] = m));
    return { lines: [`+CPMS: ${this.mem.map((m) => `${this.count(m)},${this.capacity}`).join(',')}`] };
  }

  cpmsQuery(): Outcome {
    return { lines: [`+CPMS: ${this.mem.map((m) => `"${m}",${this.count(m)},${this.capacity}`).join(',')}`] };
  }

  /** AT+CPMS=? : the memories for each of the three roles. */
  cpmsSupported(): Outcome {
    const list = `(${this.names()
      .map((m) => `"${m}"`)
      .join(',')})`;
    return { lines: [`+CPMS: ${list},${list},${list}`] };
  }

  private count(memory: string): number {
    return (this.memories.get(memory) ?? []).filter(Boolean).length;
  }

  /** Shows storage indexes; undefined when `text` is not a valid index. */
  private slotOf(text: string): number | undefined {
    if (!/^\d+$/.test(text.trim())) return undefined;
    const slot = Number(text) - this.indexBase;
    return slot >= 0 && slot < this.capacity ? slot : undefined;
  }

  cmgl(arg: string | undefined): Outcome {
    const [statText = '0', modeText = '0'] = (arg ?? '').split(',').map((s) => s.trim());
    if (!/^[0-4]$/.test(statText || '0') || !/^[01]$/.test(modeText || '0')) return { error: { cms: 304 } };
    const stat = Number(statText || '0');
    const keepStatus = modeText === '1';
    const lines: string[] = [];
    this.slots.forEach((slot, i) => {
      if (!slot || (stat !== 4 && slot.stat !== stat)) return;
      lines.push(`+CMGL: ${i + this.indexBase},${slot.stat},,${slot.tpduLength}`, slot.pdu);
      if (!keepStatus) slot.stat = 1;
    });
    return { lines };
  }

  cmgr(arg: string): Outcome {
    const [indexText = '', modeText] = arg.split(',');
    const i = this.slotOf(indexText);
    if (i === undefined) return { error: { cms: 321 } };
    const slot = this.slots[i];
    if (!slot) return OK; // empty slot: OK without a +CMGR line, as SIM800 answers
    const lines = [`+CMGR: ${slot.stat},,${slot.tpduLength}`, slot.pdu];
    if (modeText?.trim() !== '1') slot.stat = 1;
    return { lines };
  }

  /** Deletes per AT+CMGD; an answer without error means slots may have been freed. */
  cmgd(index: number, flag: number): Outcome {
    if (flag < 0 || flag > 4) return { error: { cms: 304 } };
    if (flag === 0) {
      const i = this.slotOf(String(index));
      if (i === undefined) return { error: { cms: 321 } };
      this.slots[i] = undefined;
      return OK;
    }
    // flag 1: read; 2: read + sent; 3: read + sent + unsent; 4: all. Only received messages are stored here.
    this.slots.forEach((slot, i) => {
      if (slot && (flag === 4 || slot.stat === 1)) this.slots[i] = undefined;
    });
    return OK;
  }
}
