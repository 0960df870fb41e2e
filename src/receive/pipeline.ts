/**
 * The one way a stored or directly delivered SMS goes: read -> confirm -> decide -> write -> release, then the join of
 * a multipart family it completed. Returns what each slot came to and the counters it moved; keeps no state.
 * - Nothing is released (AT+CMGD, AT+CNMA) before its record is durable; a slot whose write failed stays on the SIM.
 * - Only a PDU two reads agree on is decided: AT+CMGR until two agree ('single', 'operator'), or the batch's two
 *   listings ('batch'); reads that never agree are quarantined together, then deleted. A +CMT is read once.
 * - Every write of one run starts at once; the releases follow when all have settled, in order, and stop at the
 *   first that fails. Between the confirming read and the releases no other command is sent.
 */
import type { OtherSendersPolicy } from '../config.js';
import type { Logger } from '../log.js';
import { decodeDeliver, STATUS_REPORT_REASON } from '../sms/pdu.js';
import type { DecodedSms, StoredPdu } from '../sms/types.js';
import type { PartRecord, SimIdentity } from '../spool/types.js';
import { confirmRead } from './confirm-read.js';
import { newSmsRecord, type PartAssembler } from './parts.js';
import { isOutgoing, type SimStorage } from '../modem/sim-memory.js';
import {
  addCounts,
  noCounts,
  type HandledAs,
  type ReceiveCounts,
  type ReceiveModem,
  type ReceiveSpool,
  type Written,
} from './types.js';
import { writeArchived, writeMessage, writeQuarantine } from './write.js';
import { disposalOf, type Disposal } from '../sms/disposal.js';
import { protocolId } from '../sms/protocol-id.js';
import { octetHex } from '../sms/dcs.js';

/**
 * How the slots of a run were read, and so what may be done with them:
 * - 'single': a receive task's own read (AT+CMGR, a sweep's listing, a +CMT); AT+CMGR confirms; policy keep may ask
 *   the SIM's capacity.
 * - 'batch': both AT+CMGL listings showed the same PDU (the confirmation is done); no command may come before the
 *   deletes; the parts of the run share one parts listing.
 * - 'operator': the operator's `sms delete N`: AT+CMGR confirms; policy keep archives (the slot is going); a stored
 *   outgoing message is deleted without a record.
 */
export type SlotMode = 'single' | 'batch' | 'operator';

/** A slot to take through the pipeline: its index (read it now, AT+CMGR), or the read already made. */
export type SlotInput = number | StoredPdu;

export type Stage = 'read' | 'confirm' | 'decide' | 'write' | 'release' | 'join';

export interface SlotResult {
  index: number | undefined;
  /**
   * empty: nothing at the index on the first read (nothing counted); gone: empty on a confirming read; kept: left on
   * the SIM (policy keep); released: deleted (or acknowledged) after its record, if any, was durable; failed: stopped
   * at `stage` (the SIM still holds it); held: written, not deleted because an earlier delete of the run failed.
   */
  outcome: 'empty' | 'gone' | 'kept' | 'released' | 'failed' | 'held';
  /** What its write did (or why nothing was written). */
  handled?: HandledAs;
  /** The originator, when the confirmed PDU decoded. */
  sender?: string;
}

export interface RunResult {
  slots: SlotResult[];
  counts: ReceiveCounts;
  /** Errors in the order they happened; `index` undefined for the join of the run's multipart families. */
  failures: Array<{ index: number | undefined; stage: Stage; error: unknown }>;
}

export interface PipelineOptions {
  modem: Pick<ReceiveModem, 'readSms' | 'deleteSms' | 'acknowledgeDirect'>;
  spool: ReceiveSpool;
  parts: PartAssembler;
  /** The chosen memory's kept slots and capacity (policy keep). */
  storage: SimStorage;
  sim: SimIdentity;
  accept: (sender: string) => { accept: boolean; rule?: string };
  otherSenders: OtherSendersPolicy;
  now: () => number;
  log: Logger;
}

/** What one confirmed (or +CMT) PDU needs: left on the SIM, or an optional write and then its release. */
type Decision =
  | { kind: 'keep' }
  | {
      kind: 'release';
      stored: StoredPdu;
      sender?: string;
      handled?: HandledAs;
      write?: () => Promise<Written & { newPart?: DecodedSms }>;
    };

export class SlotPipeline {
  constructor(private readonly o: PipelineOptions) {}

  /**
   * Takes `slots` through the pipeline in `mode`. `memory`: the memory the work runs in when it is not the chosen one
   * (its slots are archived rather than kept by policy keep, and are not the kept map's).
   */
  async run(slots: readonly SlotInput[], mode: SlotMode, memory?: string): Promise<RunResult> {
    const result: RunResult = { slots: [], counts: noCounts(), failures: [] };
    const fail = (slot: SlotResult, stage: Stage, error: unknown) => {
      slot.outcome = 'failed';
      result.failures.push({ index: slot.index, stage, error });
    };
    const shared: SharedParts | undefined = mode === 'batch' ? {} : undefined;
    const jobs: Array<{
      slot: SlotResult;
      stored: StoredPdu;
      write: Promise<(Written & { newPart?: DecodedSms }) | undefined>;
    }> = [];
    for (const input of slots) {
      const slot: SlotResult = { index: typeof input === 'number' ? input : input.index, outcome: 'failed' };
      result.slots.push(slot);
      let decision: Decision;
      let stage: Stage = 'read';
      try {
        const first = typeof input === 'number' ? await this.read(input) : input;
        if (!first) {
          slot.outcome = 'empty';
          continue;
        }
        result.counts.received++;
        stage = 'confirm';
        const confirmed =
          mode === 'batch' || first.index === undefined
            ? undefined
            : await confirmRead(this.o.modem, first, this.o.log);
        if (confirmed?.kind === 'gone') {
          this.o.log.debug({ index: first.index }, 'index empty when read again (already handled)');
          slot.outcome = 'gone';
          continue;
        }
        stage = 'decide';
        decision =
          confirmed?.kind === 'disagree'
            ? { kind: 'release', stored: first, write: () => this.quarantineReads(first, confirmed.reads) }
            : await this.decide(confirmed?.stored ?? first, first.index === undefined ? 1 : 2, mode, memory, shared);
      } catch (err) {
        fail(slot, stage, err);
        if (mode === 'batch') continue; // the other slots of the batch go on; this one stays on the SIM
        break;
      }
      if (decision.kind === 'keep') {
        slot.outcome = 'kept';
        continue;
      }
      if (decision.handled) slot.handled = decision.handled;
      if (decision.sender !== undefined) slot.sender = decision.sender;
      jobs.push({
        slot,
        stored: decision.stored,
        write: decision.write ? decision.write() : Promise.resolve(undefined),
      });
    }
    const written = await Promise.allSettled(jobs.map((j) => j.write));
    const newParts: DecodedSms[] = [];
    let releaseFailed = false;
    for (const [i, job] of jobs.entries()) {
      const outcome = written[i]!;
      if (outcome.status === 'rejected') {
        fail(job.slot, 'write', outcome.reason);
        continue;
      }
      if (outcome.value) {
        job.slot.handled = outcome.value.handled;
        addCounts(result.counts, outcome.value.counts);
        if (outcome.value.newPart) newParts.push(outcome.value.newPart);
      }
      if (releaseFailed) {
        job.slot.outcome = 'held'; // the modem stopped answering deletes: the rest stay on the SIM
        continue;
      }
      try {
        await this.release(job.stored, memory);
        job.slot.outcome = 'released';
      } catch (err) {
        releaseFailed = true;
        fail(job.slot, 'release', err);
      }
    }
    if (newParts.length > 0) {
      const joined = await this.o.parts.assembleFamiliesOf(newParts);
      for (const w of joined.written) addCounts(result.counts, w.counts);
      if (joined.failed !== undefined) result.failures.push({ index: undefined, stage: 'join', error: joined.failed });
    }
    return result;
  }

  /** The first read of an index (AT+CMGR); undefined when the slot is empty. */
  private async read(index: number): Promise<StoredPdu | undefined> {
    const first = await this.o.modem.readSms(index);
    return first && { ...first, index };
  }

  /** What one confirmed (or +CMT) PDU needs, without sending a command (except policy keep's capacity query, 'single'). */
  private async decide(
    stored: StoredPdu,
    readsAgreed: number,
    mode: SlotMode,
    memory: string | undefined,
    shared: SharedParts | undefined,
  ): Promise<Decision> {
    if (mode === 'operator' && isOutgoing(stored)) {
      // A draft or a sent copy (which sweeps leave alone): nobody sent it to us, nothing to forward.
      return {
        kind: 'release',
        stored,
        handled: { spooled: 'none', reason: `a stored outgoing message (stat ${stored.stat}), nothing to forward` },
      };
    }
    const decoded = decodeDeliver(stored);
    if (!decoded.ok && decoded.reason.startsWith(STATUS_REPORT_REASON)) {
      // The bridge never asks for delivery reports (CNMI ds=0); one left by a test send is not an incoming SMS.
      this.o.log.info({ index: stored.index }, 'SMS-STATUS-REPORT on the modem (not an incoming SMS): deleted');
      return {
        kind: 'release',
        stored,
        handled: { spooled: 'none', reason: 'an SMS-STATUS-REPORT, not an incoming SMS' },
      };
    }
    if (!decoded.ok) {
      return {
        kind: 'release',
        stored,
        write: () =>
          writeQuarantine(this.o.spool, this.o.log, {
            modem: this.o.sim.modem,
            stored,
            reason: decoded.reason,
            nowMs: this.o.now(),
          }),
      };
    }
    const sms = decoded.sms;
    const sender = sms.originator;
    if (sms.extraOctets !== undefined) {
      this.o.log.warn(
        { index: stored.index, sender, extraOctets: sms.extraOctets },
        `SMS user data runs past its UDL: decoded by the UDL, ${sms.extraOctets.length / 2} extra octet(s) kept in the record: ${sms.extraOctets}`,
      );
    }
    const disposal = disposalOf(sms);
    if (disposal !== undefined) return this.dispose(stored, sms, readsAgreed, disposal);
    const verdict = this.o.accept(sender);
    const policy = verdict.accept ? undefined : await this.policy(stored, mode, memory);
    if (policy === 'keep' && stored.index !== undefined) {
      this.o.storage.keep(stored.index, stored.pdu);
      this.o.log.info({ index: stored.index, sender }, 'SMS from a sender not accepted: kept on the SIM (policy keep)');
      return { kind: 'keep' };
    }
    if (policy === 'delete' || policy === 'keep') {
      // 'delete', or 'keep' for a +CMT that was never stored (it cannot be kept: acknowledge it).
      this.o.log.info({ index: stored.index, sender }, 'SMS from a sender not accepted: deleted (policy delete)');
      return {
        kind: 'release',
        stored,
        sender,
        write: async () => ({
          handled: { spooled: 'none', reason: 'sender not accepted (policy delete)' },
          counts: { ignored: 1 },
        }),
      };
    }
    if (sms.concat && sms.concat.total > 1) {
      const c = sms.concat;
      const write = async (): Promise<Written & { newPart?: DecodedSms }> => {
        const created = await this.o.parts.store(sms, readsAgreed, shared);
        const handled: HandledAs = { spooled: 'part', part: `${c.sequence}/${c.total} (ref ${c.reference})`, created };
        return created ? { handled, counts: {}, newPart: sms } : { handled, counts: { duplicates: 1 } };
      };
      return { kind: 'release', stored, sender, write };
    }
    const pid = protocolId(sms.protocolId);
    if (pid.replace !== undefined) {
      // §9.2.3.9: it replaces an earlier one from the same originator with the same TP-PID. The bridge keeps none on
      // the SIM and cannot take back what it forwarded: forwarded as its own message (docs/modems.md).
      const fields = { index: stored.index, sender, pid: octetHex(sms.protocolId) };
      this.o.log.info(fields, `${pid.name}: forwarded as a new message (an earlier one it replaces is not withdrawn)`);
    }
    const rec = newSmsRecord(this.o.sim, sms, sms.text, [stored.pdu], this.o.now());
    rec.readsAgreed = readsAgreed;
    if (sms.extraOctets !== undefined) rec.extraOctets = sms.extraOctets;
    return {
      kind: 'release',
      stored,
      sender,
      write: () => writeMessage(this.o.spool, this.o.log, rec, verdict.accept),
    };
  }

  /**
   * An SMS the specifications do not give to a person: released from the modem like any handled SMS, never forwarded
   * and never kept on the SIM, whoever sent it. Type 0 leaves no record (its contents are discarded, §9.2.3.9); the
   * others are archived in the ignored area first (durable before the release), with the reason.
   */
  private dispose(stored: StoredPdu, sms: DecodedSms, readsAgreed: number, disposal: Disposal): Decision {
    const sender = sms.originator;
    const fields = { index: stored.index, sender, pid: octetHex(sms.protocolId), dcs: octetHex(sms.dataCoding) };
    if (disposal.action === 'discard') {
      this.o.log.info(fields, `${disposal.reason}: acknowledged and discarded, not forwarded`);
      const handled: HandledAs = { spooled: 'none', reason: disposal.reason };
      const write = async (): Promise<Written> => ({ handled, counts: { ignored: 1 } });
      return { kind: 'release', stored, sender, write };
    }
    const rec = newSmsRecord(this.o.sim, sms, sms.text, [stored.pdu], this.o.now());
    rec.readsAgreed = readsAgreed;
    const write = () => writeArchived(this.o.spool, this.o.log, rec, disposal.reason, fields);
    return { kind: 'release', stored, sender, write };
  }

  /**
   * The policy for a sender not accepted. 'keep' holds slots of the chosen memory only (in another memory, and for the
   * operator who deletes the slot, such an SMS is archived), and at most so many of them (SimStorage.keepOrArchive).
   */
  private async policy(stored: StoredPdu, mode: SlotMode, memory: string | undefined): Promise<OtherSendersPolicy> {
    const policy = this.o.otherSenders;
    if (policy !== 'keep' || stored.index === undefined) return policy;
    if (memory !== undefined || mode === 'operator') return 'archive';
    return this.o.storage.keepOrArchive(stored.index, mode === 'single');
  }

  /** Reads of one index that never agreed: quarantined together (every version read). */
  private quarantineReads(first: StoredPdu, reads: StoredPdu[]): Promise<Written> {
    const versions = [...new Set(reads.map((r) => r.pdu.trim().toUpperCase()))];
    return writeQuarantine(this.o.spool, this.o.log, {
      modem: this.o.sim.modem,
      stored: first,
      reason: `${reads.length} reads of index ${first.index} gave ${versions.length} different PDUs; none confirmed`,
      raw: versions.join('\n'),
      what: 'reads disagree',
      nowMs: this.o.now(),
    });
  }

  /**
   * Removes a durably handled SMS from the modem: AT+CNMA for +CMT, AT+CMGD otherwise. The index was read last by the
   * confirming read of this run (no command in between), or by the batch's confirming AT+CMGL (only other slots'
   * deletes in between): the re-check that it still holds this PDU.
   */
  private async release(stored: StoredPdu, memory: string | undefined): Promise<void> {
    if (stored.index === undefined) {
      await this.o.modem.acknowledgeDirect();
      return;
    }
    await this.o.modem.deleteSms(stored.index);
    if (memory === undefined) this.o.storage.forget(stored.index);
  }
}

/**
 * The parts listing shared by the multipart slots of one batch: fetched on first use, then each part spooled by the
 * batch is added to it, so a part listed twice is spooled once (PartAssembler.store).
 */
interface SharedParts {
  snapshot?: Promise<PartRecord[]>;
}
