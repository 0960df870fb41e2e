/**
 * The SIM's SMS storage ("SM", the only memory the virtual modem has) and the 27.005 commands that read and change
 * it: AT+CPMS, AT+CMGL, AT+CMGR, AT+CMGD (PDU mode; the caller refuses text mode before these run).
 *
 * Contract:
 * - `capacity` slots, shown as indexes from `indexBase` (1 as 27.005 usually, 0 as some Huawei firmwares). A message
 *   lands in the lowest free slot; a full storage takes nothing (put() answers undefined, the caller decides).
 * - Storage lives on the SIM: nothing here is reset by a reboot; snapshot/restore go through stored()/restore().
 * - AT+CMGL / AT+CMGR mark what they show as read (stat 1) unless their mode argument is 1. AT+CMGR of an empty slot
 *   answers OK without a +CMGR line, as SIM800 does. An index outside the storage is +CMS ERROR: 321.
 * - AT+CMGD with flag 0 deletes one index; flags 1-3 delete read messages (only received messages are stored here),
 *   4 deletes all.
 * No I/O and no timers here.
 */
import { buildDeliverPdus, type BuiltPdu } from './pdu-builder.js';
import { OK, type Outcome } from './at-command.js';
import type { StoredMessage } from './virtual-modem-types.js';

interface Slot {
  stat: 0 | 1;
  pdu: string;
  tpduLength: number;
}

export class SmsStorage {
  private readonly slots: (Slot | undefined)[];

  constructor(
    readonly capacity: number,
    readonly indexBase: 0 | 1,
  ) {
    this.slots = new Array<Slot | undefined>(capacity).fill(undefined);
  }

  used(): number {
    return this.slots.filter(Boolean).length;
  }

  hasFree(): boolean {
    return this.slots.includes(undefined);
  }

  /** Stores an unread message in the lowest free slot; returns its index, or undefined when the storage is full. */
  put(built: BuiltPdu): number | undefined {
    const free = this.slots.findIndex((s) => s === undefined);
    if (free < 0) return undefined;
    this.slots[free] = { stat: 0, pdu: built.pdu, tpduLength: built.tpduLength };
    return free + this.indexBase;
  }

  stored(): StoredMessage[] {
    const out: StoredMessage[] = [];
    this.slots.forEach((slot, i) => {
      if (slot) out.push({ index: i + this.indexBase, stat: slot.stat, pdu: slot.pdu, tpduLength: slot.tpduLength });
    });
    return out;
  }

  /** Replaces the whole storage; every message keeps its index. */
  restore(messages: ReadonlyArray<{ index: number; stat: 0 | 1; pdu: string; tpduLength: number }>): void {
    this.slots.fill(undefined);
    for (const m of messages) {
      const i = m.index - this.indexBase;
      if (i < 0 || i >= this.capacity) throw new RangeError(`stored SMS at index ${m.index} does not fit a storage of ${this.capacity}`);
      this.slots[i] = { stat: m.stat, pdu: m.pdu, tpduLength: m.tpduLength };
    }
  }

  /** Fills every free slot with a read message from a number (storage full scenarios). */
  fill(): void {
    this.slots.forEach((slot, i) => {
      if (slot) return;
      const [built] = buildDeliverPdus({
        originator: '+6281300000000',
        text: `filler ${i + this.indexBase}`,
        timestamp: new Date(Date.UTC(2026, 0, 1)),
        tzQuarterHours: 28,
      });
      if (built) this.slots[i] = { stat: 1, ...built };
    });
  }

  cpmsSet(args: string): Outcome {
    const mems = args.split(',').map((s) => s.trim().replace(/^"|"$/g, '').toUpperCase());
    if (mems.length > 3 || mems.some((m) => m !== 'SM')) return { error: { cms: 302 } };
    return { lines: [`+CPMS: ${Array(3).fill(`${this.used()},${this.capacity}`).join(',')}`] };
  }

  cpmsQuery(): Outcome {
    return { lines: [`+CPMS: ${Array(3).fill(`"SM",${this.used()},${this.capacity}`).join(',')}`] };
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
