/**
 * The generic 3GPP modem over one AtChannel: init, status, stored-SMS list/read/delete, +CMT acknowledgement, USSD
 * and sending; URCs become events. Vendor behaviour comes only from the ModemProfile.
 * Invariants: never deletes or acknowledges on its own (the owner does, after its durable write); indexes are used as
 * the modem reports them; the PIN is never logged and a rejected PIN is never sent again (sim-unlock.ts); one USSD
 * session at a time; info() tolerates single failures. Signs of a restart become 'reboot' / 'reset-suspected' events.
 * Every SMS command first makes sure the read/delete memory is the one the work means (sim-memory.ts).
 */
import { EventEmitter } from 'node:events';
import type { AtChannel, AtResponse, FinalResultEntry, Urc } from '../at/types.js';
import { AtCommandError, BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { StoredPdu } from '../sms/types.js';
import { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import { runInit, type InitState, type ModemIdentity } from './init.js';
import {
  parseCmgl,
  parseCmgr,
  parseCmgs,
  parseCopsName,
  parseCsca,
  parseCsq,
  parseRegistrationQuery,
  type Registration,
  type SignalQuality,
  type StorageUsage,
} from './parse.js';
import { isSimResetError, type ProbeOutcome } from './liveness.js';
import {
  ANY_RESET_HINTS,
  detectionUrcTable,
  generic,
  getProfile,
  PROFILES,
  profileUrcTable,
} from './profiles/index.js';
import { SimUnlock, type RejectedPins } from './sim-unlock.js';
import type { ModemProfile, ProfileId } from './types.js';
import { UrcEvents, type UrcEvent } from './urc-events.js';
import { UssdSession, type PendingUssdReply, type UssdReply } from './ussd-session.js';
import { isHex } from './ussd-codec.js';
import { SmsMemories, type StorageFill } from './sim-memory.js';
import { StateProbe, type ProbeSample, type SampledState } from './state-probe.js';

export type {
  ModemIdentity,
  PendingUssdReply,
  ProbeOutcome,
  ProbeSample,
  Registration,
  SampledState,
  SignalQuality,
  StorageFill,
  StorageUsage,
  UssdReply,
};

/** AT+CMGL: the bound of the whole listing (a full SIM at 9600 baud) and the longest pause between two of its lines. */
const LIST_TIMEOUT_MS = 120_000;
const LIST_IDLE_TIMEOUT_MS = 15_000;

export interface ModemOptions {
  channel: AtChannel;
  /** Name used in logs and error messages (config modems[].name). */
  name: string;
  logger: Logger;
  pin?: string;
  /** Rejected PINs by SIM, shared by every Modem of one configured modem (the daemon's persists them). */
  rejectedPins?: RejectedPins;
  profile?: ProfileId | 'auto';
  storage?: 'SM' | 'ME' | 'MT' | 'auto';
  /** 'store' (+CMTI, read, delete: the default and the safe one) or 'direct' (+CMT, needs acknowledgeDirect). */
  delivery?: 'store' | 'direct';
  /** Longest wait for the SMS service after boot; default from the profile (30 s). */
  smsReadyTimeoutMs?: number;
  /** Pause between polls while waiting for SMS ready or a busy SIM. Default 1000 ms. */
  pollIntervalMs?: number;
  /** How long a USSD reply may take. Default 30 s. */
  ussdTimeoutMs?: number;
  /** Window in which a repeated +CMTI for the same slot is a duplicate (profiles with duplicateIndications). */
  duplicateWindowMs?: number;
  /** Milliseconds clock for the duplicate window. Default Date.now. */
  now?: () => number;
}

export interface ModemInfo {
  name: string;
  profile: ProfileId;
  identity: ModemIdentity | undefined;
  /** 'READY', 'SIM PIN', 'SIM PUK', ... as AT+CPIN? reported it. */
  simState: string | undefined;
  signal: SignalQuality | undefined;
  registration: Registration | undefined;
  operator: string | undefined;
  storage: StorageUsage[] | undefined;
  smsc: string | undefined;
  /** The CNMI setting init applied, e.g. '2,1,0,0,0'; undefined when none was accepted (polling only). */
  cnmi: string | undefined;
  /** One line per item that could not be read. */
  errors: string[];
}

type EventInfo<N extends UrcEvent['name']> = Extract<UrcEvent, { name: N }>['info'];

export type ModemEvents = {
  sms: [info: EventInfo<'sms'>];
  'sms-direct': [info: EventInfo<'sms-direct'>];
  'status-report': [info: EventInfo<'status-report'>];
  reboot: [info: EventInfo<'reboot'>];
  'reset-suspected': [info: EventInfo<'reset-suspected'>];
  'storage-full': [info: EventInfo<'storage-full'>];
  ussd: [reply: UssdReply];
  urc: [urc: Urc];
};

export class Modem extends EventEmitter<ModemEvents> {
  readonly name: string;
  private readonly channel: AtChannel;
  private readonly at: ModemAt;
  private readonly log: Logger;
  private readonly options: ModemOptions;
  private readonly pollIntervalMs: number;
  private currentProfile: ModemProfile;
  private readonly finalResultsInstalled = new Set<FinalResultEntry>();
  private currentIdentity: ModemIdentity | undefined;
  private initDone = false;
  private detected = false;
  private readonly state: InitState = { storage: undefined, capacities: [], cnmi: undefined, delivery: 'store' };
  private readonly sim: SimUnlock;
  private readonly ussdSession: UssdSession;
  private readonly urcEvents: UrcEvents;
  private readonly delay: (ms: number) => Promise<void>;
  /** The liveness probe's memory of what this firmware answers (state-probe.ts). */
  private readonly prober: StateProbe;
  /** Which SMS memory the SMS commands read and delete in, and how full each is (sim-memory.ts). */
  private readonly memories: SmsMemories;

  constructor(options: ModemOptions) {
    super();
    this.options = options;
    this.name = options.name;
    this.channel = options.channel;
    this.log = options.logger.child({ modem: options.name });
    this.at = new ModemAt(this.channel, this.name, this.log);
    this.memories = new SmsMemories({ channel: this.channel, at: this.at, name: this.name, log: this.log });
    this.prober = new StateProbe({ channel: this.channel, at: this.at, log: this.log });
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    const configured = options.profile;
    this.currentProfile = configured === undefined || configured === 'auto' ? generic : getProfile(configured);
    const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    this.sim = new SimUnlock({
      at: this.at,
      name: this.name,
      log: this.log,
      pin: options.pin,
      pollIntervalMs: this.pollIntervalMs,
      delay,
      ...(options.rejectedPins ? { rejectedPins: options.rejectedPins } : {}),
    });
    this.ussdSession = new UssdSession({
      at: this.at,
      name: this.name,
      log: this.log,
      profile: () => this.currentProfile,
      ...(options.ussdTimeoutMs !== undefined ? { timeoutMs: options.ussdTimeoutMs } : {}),
      onUnsolicited: (reply) => this.emit('ussd', reply),
    });
    this.urcEvents = new UrcEvents({
      log: this.log,
      ...(options.duplicateWindowMs !== undefined ? { duplicateWindowMs: options.duplicateWindowMs } : {}),
      ...(options.now ? { now: options.now } : {}),
    });
    this.delay = delay;
    this.installTables();
    this.channel.on('urc', this.onUrc);
    this.channel.on('unexpected', this.onUnexpected);
  }

  get profile(): ModemProfile {
    return this.currentProfile;
  }

  get identity(): ModemIdentity | undefined {
    return this.currentIdentity;
  }

  /** The CNMI setting in use ('2,1,0,0,0'), undefined before init or when the modem accepted none. */
  get cnmi(): string | undefined {
    return this.state.cnmi;
  }

  /** The SMS memory chosen by init ('SM', 'ME', 'MT'), undefined when the modem default was kept. */
  get storage(): string | undefined {
    return this.state.storage;
  }

  /** Used / total slots of the chosen storage as AT+CPMS=... reported them at init. */
  get storageCapacity(): { used: number; total: number } | undefined {
    return this.state.capacities[0];
  }

  /** Removes the channel listeners (the channel itself is the owner's). */
  detach(): void {
    this.channel.off('urc', this.onUrc);
    this.channel.off('unexpected', this.onUnexpected);
    this.ussdSession.dispose();
  }

  // ---- init -----------------------------------------------------------------------------------------------------

  async init(): Promise<ModemIdentity> {
    this.initDone = false;
    this.prober.newSession();
    this.memories.forget();
    const configured = this.options.profile;
    const fixedProfile = configured !== undefined && configured !== 'auto';
    this.installTables();
    const identity = await runInit({
      at: this.at,
      name: this.name,
      log: this.log,
      settings: {
        ...(this.options.storage !== undefined ? { storage: this.options.storage } : {}),
        ...(this.options.delivery !== undefined ? { delivery: this.options.delivery } : {}),
        ...(this.options.smsReadyTimeoutMs !== undefined ? { smsReadyTimeoutMs: this.options.smsReadyTimeoutMs } : {}),
      },
      pollIntervalMs: this.pollIntervalMs,
      sim: this.sim,
      state: this.state,
      profile: () => this.currentProfile,
      ...(fixedProfile
        ? {}
        : {
            detected: (profile: ModemProfile) => {
              this.currentProfile = profile;
              this.detected = true;
              this.installTables();
            },
          }),
      delay: this.delay,
    });
    this.currentIdentity = identity;
    this.memories.initialised(this.state.storage, this.state.capacities[0]);
    this.initDone = true;
    this.log.info(
      { profile: this.currentProfile.id, storage: this.state.storage, cnmi: this.state.cnmi },
      'modem ready',
    );
    return identity;
  }

  /**
   * Installs the URC table and extra final results. While the profile is still to be detected (profile 'auto',
   * before AT+CGMI), every vendor's rows are installed so their noise is recognised during identification.
   */
  private installTables(): void {
    const detecting = (this.options.profile ?? 'auto') === 'auto' && !this.detected;
    const profiles = detecting ? PROFILES : [this.currentProfile];
    this.channel.setUrcTable(detecting ? detectionUrcTable() : profileUrcTable(this.currentProfile));
    for (const profile of profiles) {
      // A row that is also an answer (Wavecom's `+CPIN: READY` ending AT+CPIN?) is that family's alone: never
      // installed while detecting, where a modem that does send OK would see its OK end the next command.
      const rows = detecting ? profile.finalResults.filter((r) => !r.isAnswer) : profile.finalResults;
      const fresh = rows.filter((r) => !this.finalResultsInstalled.has(r));
      if (fresh.length === 0) continue;
      this.channel.addFinalResults(fresh);
      for (const r of fresh) this.finalResultsInstalled.add(r);
    }
  }

  // ---- status ---------------------------------------------------------------------------------------------------

  async signal(): Promise<SignalQuality> {
    const res = await this.channel.run('AT+CSQ');
    const q = parseCsq(res.lines);
    if (!q) throw new BridgeError('AT_ERROR', `${this.name}: unreadable AT+CSQ answer ${JSON.stringify(res.lines)}`);
    return q;
  }

  /** CS registration (AT+CREG?), or EPS (AT+CEREG?) when that is registered and CS is not (LTE-only modems). */
  async registration(): Promise<Registration> {
    let creg: Registration | undefined;
    let cregError: unknown;
    try {
      creg = parseRegistrationQuery((await this.channel.run('AT+CREG?')).lines, 'CREG');
    } catch (err) {
      this.at.rethrowIfGone(err);
      cregError = err;
    }
    if (creg?.registered) return creg;
    const eps = await this.at.tryLines('AT+CEREG?');
    const cereg = eps && parseRegistrationQuery(eps, 'CEREG');
    if (cereg && (cereg.registered || !creg)) return cereg;
    if (creg) return creg;
    throw new BridgeError('AT_ERROR', `${this.name}: registration unknown (AT+CREG? and AT+CEREG? gave no answer)`, {
      cause: cregError,
    });
  }

  async storageUsage(): Promise<StorageUsage[]> {
    return this.memories.usage();
  }

  // ---- storages (sim-memory.ts) ----------------------------------------------------------------------------------

  /** The memories to look for received SMS in (SmsMemories.receiveStorages). */
  receiveStorages(now: number = Date.now()): string[] {
    return this.memories.receiveStorages(this.state.storage, this.state.offered ?? [], now);
  }

  /** The chosen memory (the one indications without a memory name mean). */
  get homeStorage(): string | undefined {
    return this.state.storage;
  }

  /** Each memory's fill as the modem last showed it (init, AT+CPMS answers, sweeps). */
  storageFills(): StorageFill[] {
    return this.memories.fills();
  }

  /** Runs `work` with `storage` as the read/delete memory (SmsMemories.inStorage). */
  async inStorage<T>(
    storage: string,
    work: (fill: { used: number; total: number } | undefined) => Promise<T>,
  ): Promise<T> {
    return this.memories.inStorage(this.state.storage, storage, work);
  }

  async info(): Promise<ModemInfo> {
    const errors: string[] = [];
    const attempt = async <T>(label: string, fn: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await fn();
      } catch (err) {
        this.at.rethrowIfGone(err);
        errors.push(
          `${label}: ${err instanceof AtCommandError ? describeFinal(err.final) : err instanceof Error ? err.message : String(err)}`,
        );
        return undefined;
      }
    };
    const simState = await attempt('sim', () => this.sim.query(this.currentProfile));
    const signal = await attempt('signal', () => this.signal());
    const registration = await attempt('registration', () => this.registration());
    const operator = await attempt('operator', async () => parseCopsName((await this.channel.run('AT+COPS?')).lines));
    const storage = await attempt('storage', () => this.storageUsage());
    const smsc = await attempt('smsc', async () => parseCsca((await this.channel.run('AT+CSCA?')).lines));
    return {
      name: this.name,
      profile: this.currentProfile.id,
      identity: this.currentIdentity,
      simState,
      signal,
      registration,
      operator,
      storage,
      smsc,
      cnmi: this.state.cnmi,
      errors,
    };
  }

  /** The liveness probe (one command, StateProbe.probe): reads back a setting init applied. */
  probeState(options: { timeoutMs?: number; sample?: ProbeSample } = {}): Promise<ProbeOutcome & SampledState> {
    return this.prober.probe(this.state, options);
  }

  /**
   * How full the memory received SMS land in is: from the last full listing when it is at most `maxAgeMs` old (no
   * command: idle traffic stays at one AT+CMGL per sweep), else AT+CPMS? (SmsMemories.receiveUsage).
   */
  receiveUsage(maxAgeMs: number): Promise<{ used: number; total: number } | undefined> {
    return this.memories.receiveUsage(
      this.state.storage,
      this.state.capacities[2] ?? this.state.capacities[0],
      maxAgeMs,
    );
  }

  /** An SMS command failed: +CMS ERROR 310-316 after init means the SIM was re-read (a restart). */
  private noteFailure(command: string, err: unknown): void {
    if (!this.initDone || !(err instanceof AtCommandError) || !isSimResetError(err.final, err.errorCode)) return;
    this.log.warn(
      { command, final: err.final },
      'SIM error on an SMS command after init: the modem may have restarted',
    );
    this.emit('reset-suspected', { reason: `${command} answered ${describeFinal(err.final)}` });
  }

  /** channel.run for the SMS commands: failures are checked for signs of a restart, then rethrown. */
  private async runSms(command: string, timeoutMs: number, idleTimeoutMs?: number): Promise<AtResponse> {
    if (this.initDone) await this.memories.ensure(this.state.storage);
    try {
      return await this.channel.run(command, { timeoutMs, ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}) });
    } catch (err) {
      this.noteFailure(command, err);
      throw err;
    }
  }

  // ---- stored SMS -----------------------------------------------------------------------------------------------

  async listSms(which: 'all' | 'unread' = 'all'): Promise<StoredPdu[]> {
    // A full SIM's listing may take a minute at a low baud rate (255 slots at 9600 baud: ~85 s of wire); a modem that
    // goes silent in the middle of one is noticed after LIST_IDLE_TIMEOUT_MS without a line, not after the whole bound.
    const res = await this.runSms(`AT+CMGL=${which === 'all' ? 4 : 0}`, LIST_TIMEOUT_MS, LIST_IDLE_TIMEOUT_MS);
    const { messages, skipped } = parseCmgl(res.lines);
    if (which === 'all') this.memories.listed(this.state.storage, messages.length + skipped.length);
    if (skipped.length > 0) this.log.error({ skipped }, 'AT+CMGL lines that could not be read were skipped');
    return messages;
  }

  /**
   * The SMS in slot `index`, or undefined when the slot reads as empty: +CMS ERROR: 321, or a bare OK (SIM800 for an
   * empty slot; Quectel for an index in another memory than the selected one). The caller that was told the slot
   * holds an SMS checks with a listing before it believes that.
   */
  async readSms(index: number): Promise<StoredPdu | undefined> {
    let res: AtResponse;
    try {
      res = await this.runSms(`AT+CMGR=${index}`, 15_000);
    } catch (err) {
      if (err instanceof AtCommandError && err.errorCode === 321) return undefined;
      throw err;
    }
    return parseCmgr(res.lines, index);
  }

  /** Deletes slot `index`; an already empty slot (+CMS ERROR: 321) counts as deleted. */
  async deleteSms(index: number): Promise<void> {
    try {
      await this.runSms(`AT+CMGD=${index}`, 15_000);
      this.memories.deleted(this.state.storage);
    } catch (err) {
      if (!(err instanceof AtCommandError && err.errorCode === 321)) throw err;
      this.log.debug({ index }, 'AT+CMGD: slot already empty (+CMS ERROR: 321), counted as deleted');
    }
    this.urcEvents.forget(index);
  }

  /** Acknowledges a +CMT (direct delivery). +CMS ERROR: 340 (no acknowledgement expected) is logged and accepted. */
  async acknowledgeDirect(): Promise<void> {
    for (const command of ['AT+CNMA', 'AT+CNMA=0']) {
      try {
        await this.channel.run(command);
        return;
      } catch (err) {
        this.at.rethrowIfGone(err);
        if (err instanceof AtCommandError && err.errorCode === 340) {
          // Too late: the modem stopped waiting and the network will deliver the SMS again (same record id).
          this.log.warn(
            { command },
            'AT+CNMA: no acknowledgement expected (+CMS ERROR: 340); the network redelivers, the spool dedups',
          );
          return;
        }
        if (command === 'AT+CNMA=0') {
          // TS 27.005: after a failed acknowledgement the modem may turn +CMT routing off (mt=0): turn it back on.
          if (this.state.cnmi) await this.at.tryLines(`AT+CNMI=${this.state.cnmi}`);
          throw err;
        }
        this.log.debug(
          { final: err instanceof AtCommandError ? err.final : undefined },
          'AT+CNMA refused; trying AT+CNMA=0',
        );
      }
    }
  }

  // ---- sending --------------------------------------------------------------------------------------------------

  /** Sends prepared SMS-SUBMIT PDUs (one per part) and returns the message references (-1: none reported). */
  async sendSms(to: string, pdus: Array<{ pdu: string; tpduLength: number }>): Promise<number[]> {
    const refs: number[] = [];
    for (const [i, part] of pdus.entries()) {
      if (
        !isHex(part.pdu) ||
        !Number.isInteger(part.tpduLength) ||
        part.tpduLength <= 0 ||
        part.tpduLength * 2 > part.pdu.length
      ) {
        throw new BridgeError(
          'PDU_INVALID',
          `${this.name}: SMS part ${i + 1}/${pdus.length} to ${to} is not a valid PDU`,
        );
      }
      const command = `AT+CMGS=${part.tpduLength}`;
      let res: AtResponse;
      try {
        res = await this.channel.runWithPrompt(command, part.pdu, { timeoutMs: 60_000 });
      } catch (err) {
        this.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError)) throw err;
        throw new AtCommandError(
          err.code as 'AT_ERROR' | 'AT_TIMEOUT',
          `${this.name}: sending SMS to ${to} failed at part ${i + 1}/${pdus.length}: ${describeFinal(err.final)}`,
          {
            command,
            final: err.final,
            errorCode: err.errorCode,
            lines: err.lines,
            cause: err,
          },
        );
      }
      const ref = parseCmgs(res.lines);
      if (ref === undefined) this.log.warn({ to, part: i + 1 }, 'AT+CMGS succeeded without a +CMGS reference');
      refs.push(ref ?? -1);
    }
    return refs;
  }

  // ---- USSD -----------------------------------------------------------------------------------------------------

  /** Starts a USSD session (`*888#`). Status 1 in the reply: answer with ussdReply() or end with ussdCancel(). */
  ussd(code: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    return this.ussdSession.start(code, options);
  }

  /** Answers a USSD session that asked for input (status 1). */
  ussdReply(text: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    return this.ussdSession.reply(text, options);
  }

  /**
   * Sends a USSD request and resolves once the modem accepted it, the reply still to come (see UssdSession.send):
   * for a caller that holds the channel only while the command is in flight (src/ops/ussd-broker.ts).
   */
  ussdSend(text: string, kind: 'open' | 'reply', options: { timeoutMs?: number } = {}): Promise<PendingUssdReply> {
    return this.ussdSession.send(text, kind, options);
  }

  /** True while a USSD session waits for an answer (status 1), also one the network opened. */
  get ussdWaitingForInput(): boolean {
    return this.ussdSession.waitingForInput;
  }

  /** Ends the USSD session (AT+CUSD=2). A refusal is logged: many modems answer ERROR when no session is open. */
  ussdCancel(): Promise<void> {
    return this.ussdSession.cancel();
  }

  // ---- URCs -----------------------------------------------------------------------------------------------------

  private readonly onUnexpected = (line: string): void => {
    this.ussdSession.onUnexpected(line);
  };

  private readonly onUrc = (urc: Urc): void => {
    const ctx = {
      profile: this.currentProfile,
      initDone: this.initDone,
      storage: this.state.storage,
      resetHints: ANY_RESET_HINTS,
    };
    this.emit('urc', urc);
    if (urc.name === 'cusd') this.ussdSession.onCusd(urc);
    for (const event of this.urcEvents.map(urc, ctx)) {
      if (event.name === 'reboot') this.initDone = false;
      if (event.name === 'sms') this.memories.announced(this.state.storage, event.info.storage);
      this.emitEvent(event);
    }
  };

  private emitEvent(event: UrcEvent): void {
    switch (event.name) {
      case 'sms':
        this.emit('sms', event.info);
        break;
      case 'sms-direct':
        this.emit('sms-direct', event.info);
        break;
      case 'status-report':
        this.emit('status-report', event.info);
        break;
      case 'reboot':
        this.emit('reboot', event.info);
        break;
      case 'reset-suspected':
        this.emit('reset-suspected', event.info);
        break;
      case 'storage-full':
        this.emit('storage-full', event.info);
        break;
    }
  }
}
