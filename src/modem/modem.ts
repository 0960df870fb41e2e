/**
 * The generic 3GPP modem over one AtChannel: init, status, stored-SMS list/read/delete, +CMT acknowledgement, USSD
 * and sending; URCs become events. Vendor behaviour comes only from the ModemProfile.
 * Invariants: never deletes or acknowledges on its own (the owner does, after its durable write); indexes are used as
 * the modem reports them; the PIN is never logged and a rejected PIN is never sent again (sim-unlock.ts); one USSD
 * session at a time; info() tolerates single failures. Signs of a restart become 'reboot' / 'reset-suspected' events.
 * Every SMS command first makes sure the read/delete memory is the one the work means (inStorage()).
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
  parseCpmsQuery,
  parseCpmsSet,
  parseCsca,
  parseCsq,
  parseRegistrationQuery,
  type Registration,
  type SignalQuality,
  type StorageUsage,
} from './parse.js';
import { isSimResetError, judgeCmee, judgeCnmi, type ProbeOutcome } from './liveness.js';
import { ANY_RESET_HINTS, detectionUrcTable, generic, getProfile, PROFILES, profileUrcTable } from './profiles/index.js';
import { SimUnlock, type RejectedPins } from './sim-unlock.js';
import type { ModemProfile, ProfileId } from './types.js';
import { UrcEvents, type UrcEvent } from './urc-events.js';
import { buildUrcTable } from './urcs.js';
import { UssdSession, type PendingUssdReply, type UssdReply } from './ussd-session.js';
import { isHex } from './ussd-codec.js';

/** Memories that hold received SMS (27.005: SM the SIM, ME the modem, MT both); others (SR, BM) never do. */
const RECEIVE_MEMORIES = ['SM', 'ME', 'MT'];
/** A memory the modem refused to select is not tried again for this long. */
const REFUSED_FOR_MS = 10 * 60_000;

/** One memory's fill as the modem last reported it. */
export interface StorageFill {
  storage: string;
  used: number;
  total: number;
  /** ISO time of the answer that showed it. */
  checkedAt: string;
}

export type { ModemIdentity, PendingUssdReply, ProbeOutcome, Registration, SignalQuality, StorageUsage, UssdReply };

/** AT+CMGL: the bound of the whole listing (a full SIM at 9600 baud) and the longest pause between two of its lines. */
const LIST_TIMEOUT_MS = 120_000;
const LIST_IDLE_TIMEOUT_MS = 15_000;

/** What a liveness probe may sample on the same AT line as its state read (signal or registration, for health). */
export type ProbeSample = 'signal' | 'registration';
export interface SampledState {
  signal?: SignalQuality;
  registration?: Registration;
}

function sampled(kind: ProbeSample, lines: readonly string[]): SampledState {
  if (kind === 'signal') {
    const q = parseCsq(lines);
    return q ? { signal: q } : {};
  }
  const r = parseRegistrationQuery(lines, 'CREG');
  return r ? { registration: r } : {};
}

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
  /** Probe commands that answered once in this session (an ERROR from one of them later means a restart). */
  private readonly probeAnswered = new Set<string>();
  /** Probe commands this firmware refuses (the probe falls back to the next one). */
  private readonly probeRefused = new Set<string>();
  /** Probe commands this firmware refuses with a sample on the same line (`AT+CNMI?;+CSQ`): sampled on their own. */
  private readonly combinedRefused = new Set<string>();
  /** SIM use as the last full listing saw it, kept current by deletes and indications (see recentUsage). */
  private listed: { at: number; used: number } | undefined;
  /** The read/delete memory (mem1) as the modem has it now; undefined when unknown (before init, after a failed switch). */
  private readMemory: string | undefined;
  /** The memory the work in progress reads (inStorage); undefined: the one init chose. */
  private foreignMemory: string | undefined;
  /** Memories the modem refused to select, with the time (not tried again for REFUSED_FOR_MS). */
  private readonly refusedMemories = new Map<string, number>();
  private readonly fills = new Map<string, StorageFill>();

  constructor(options: ModemOptions) {
    super();
    this.options = options;
    this.name = options.name;
    this.channel = options.channel;
    this.log = options.logger.child({ modem: options.name });
    this.at = new ModemAt(this.channel, this.name, this.log);
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    const configured = options.profile;
    this.currentProfile = configured === undefined || configured === 'auto' ? generic : getProfile(configured);
    const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    this.sim = new SimUnlock({
      at: this.at, name: this.name, log: this.log, pin: options.pin, pollIntervalMs: this.pollIntervalMs, delay,
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
    this.probeAnswered.clear();
    this.listed = undefined;
    this.readMemory = undefined;
    this.foreignMemory = undefined;
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
    this.readMemory = this.state.storage;
    if (this.state.storage !== undefined && this.state.capacities[0]) this.noteFill(this.state.storage, this.state.capacities[0]);
    this.initDone = true;
    this.log.info({ profile: this.currentProfile.id, storage: this.state.storage, cnmi: this.state.cnmi }, 'modem ready');
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
    throw new BridgeError('AT_ERROR', `${this.name}: registration unknown (AT+CREG? and AT+CEREG? gave no answer)`, { cause: cregError });
  }

  async storageUsage(): Promise<StorageUsage[]> {
    const rows = parseCpmsQuery((await this.channel.run('AT+CPMS?')).lines);
    for (const row of rows) this.noteFill(row.memory, row);
    return rows;
  }

  // ---- storages -------------------------------------------------------------------------------------------------

  /**
   * The memories to look for received SMS in: the one init chose first, then every other memory AT+CPMS=? offers that
   * can hold received SMS (SM, ME). MT is the union of SM and ME (27.005): listed only when it is the chosen one, then
   * alone. A memory refused lately is left out. Empty when init kept the modem default (nothing to switch back to).
   */
  receiveStorages(now: number = Date.now()): string[] {
    const home = this.state.storage;
    if (home === undefined) return [];
    if (home === 'MT') return ['MT'];
    const others = (this.state.offered ?? []).filter((m) => m !== home && m !== 'MT' && RECEIVE_MEMORIES.includes(m) && !this.refusedLately(m, now));
    return [home, ...new Set(others)];
  }

  /** The chosen memory (the one indications without a memory name mean). */
  get homeStorage(): string | undefined {
    return this.state.storage;
  }

  /** Each memory's fill as the modem last showed it (init, AT+CPMS answers, sweeps). */
  storageFills(): StorageFill[] {
    return [...this.fills.values()].map((f) => ({ ...f }));
  }

  /**
   * Runs `work` with `storage` as the read/delete memory: AT+CPMS="<storage>" first (its answer's fill is handed to
   * `work`), the chosen memory selected again after, also when `work` throws. A storage the modem refuses is a
   * BridgeError AT_ERROR naming it (and is left out of receiveStorages() for a while); the chosen memory itself, or
   * any memory when init kept the modem default, runs `work` at once.
   */
  async inStorage<T>(storage: string, work: (fill: { used: number; total: number } | undefined) => Promise<T>): Promise<T> {
    const want = storage.toUpperCase();
    const home = this.state.storage;
    if (home === undefined || want === home || want === '') return work(undefined);
    if (this.foreignMemory !== undefined && this.foreignMemory !== want) throw new BridgeError('AT_ERROR', `${this.name}: storage ${want} asked for while working in ${this.foreignMemory}`);
    const outer = this.foreignMemory;
    this.foreignMemory = want;
    try {
      const fill = await this.selectReadMemory(want);
      return await work(fill);
    } finally {
      this.foreignMemory = outer;
      await this.ensureReadMemory().catch((err: unknown) => {
        this.at.rethrowIfGone(err);
        this.log.error({ err, storage: home }, `could not select SMS storage ${home} again (AT+CPMS); retried before the next SMS command: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  }

  /** Points mem1 at `memory` (AT+CPMS="<memory>"); notes and returns the fill its answer shows. */
  private async selectReadMemory(memory: string): Promise<{ used: number; total: number } | undefined> {
    if (this.readMemory === memory) return this.fills.get(memory);
    let lines: string[];
    const before = this.readMemory;
    try {
      this.readMemory = undefined; // unknown until the modem answered (a timeout leaves it unknown)
      lines = (await this.channel.run(`AT+CPMS="${memory}"`)).lines;
    } catch (err) {
      this.at.rethrowIfGone(err);
      if (err instanceof AtCommandError && err.code === 'AT_ERROR') {
        this.readMemory = before; // refused: the selection did not change (27.005)
        this.refusedMemories.set(memory, Date.now());
        this.log.error({ storage: memory, final: err.final }, `the modem refuses to select SMS storage ${memory} (${describeFinal(err.final)}): SMS it announces there cannot be read; not tried again for ${REFUSED_FOR_MS / 60_000} minutes`);
        throw new BridgeError('AT_ERROR', `${this.name}: the modem refuses SMS storage ${memory} (${describeFinal(err.final)})`, { cause: err, hint: 'the SMS stays in the modem; `pulsa-bridge at AT+CPMS=?` shows the memories it offers' });
      }
      throw err;
    }
    this.readMemory = memory;
    const fill = parseCpmsSet(lines)[0];
    if (fill) this.noteFill(memory, fill);
    return fill;
  }

  /** Before every SMS command: mem1 is where the work in progress wants it (a failed switch back is retried here). */
  private async ensureReadMemory(): Promise<void> {
    const want = this.foreignMemory ?? this.state.storage;
    if (want === undefined || this.readMemory === want) return;
    await this.selectReadMemory(want);
  }

  private refusedLately(memory: string, now: number): boolean {
    const at = this.refusedMemories.get(memory);
    return at !== undefined && now - at < REFUSED_FOR_MS;
  }

  private noteFill(storage: string, fill: { used: number; total: number }): void {
    this.fills.set(storage.toUpperCase(), { storage: storage.toUpperCase(), used: fill.used, total: fill.total, checkedAt: new Date().toISOString() });
  }

  async info(): Promise<ModemInfo> {
    const errors: string[] = [];
    const attempt = async <T>(label: string, fn: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await fn();
      } catch (err) {
        this.at.rethrowIfGone(err);
        errors.push(`${label}: ${err instanceof AtCommandError ? describeFinal(err.final) : err instanceof Error ? err.message : String(err)}`);
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

  /**
   * The liveness probe (one command): reads back a setting init applied, AT+CNMI? (the one that matters: without it
   * no +CMTI comes) or else AT+CMEE?, or plain AT when the firmware refuses both. A timeout rejects (AT_TIMEOUT).
   */
  async probeState(options: { timeoutMs?: number; sample?: ProbeSample } = {}): Promise<ProbeOutcome & SampledState> {
    const candidates: Array<[string, (lines: readonly string[]) => ProbeOutcome['settings']]> = [];
    const cnmi = this.state.cnmi;
    if (cnmi !== undefined) candidates.push(['AT+CNMI?', (lines) => judgeCnmi(lines, cnmi)]);
    const cmee = this.state.cmee;
    if (cmee !== undefined) candidates.push(['AT+CMEE?', (lines) => judgeCmee(lines, cmee)]);
    const run = options.timeoutMs === undefined ? undefined : { timeoutMs: options.timeoutMs };
    const extra = options.sample === 'signal' ? '+CSQ' : options.sample === 'registration' ? '+CREG?' : undefined;
    for (const [command, judge] of candidates) {
      if (this.probeRefused.has(command)) continue;
      let lines: readonly string[];
      try {
        if (extra && !this.combinedRefused.has(command)) {
          // One line, one command against the idle budget: the setting read back and the sample (`AT+CNMI?;+CSQ`).
          try {
            const both = (await this.channel.run(`${command};${extra}`, { ...run, responsePrefixes: [command.slice(2, -1), extra.replace('?', '')] })).lines;
            const outcome = { settings: judge(both), detail: `${command};${extra} -> ${both.join(' | ') || 'OK'}` };
            if (outcome.settings === 'intact') this.probeAnswered.add(command);
            return { ...outcome, ...sampled(options.sample!, both) };
          } catch (err) {
            this.at.rethrowIfGone(err);
            if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
            // The combined line was refused: probe alone below, and from now on sample on its own line.
            this.log.info({ command: `${command};${extra}`, final: err.final }, 'liveness probe: the modem refuses a sample on the probe line; sampling on its own line');
            this.combinedRefused.add(command);
          }
        }
        lines = (await this.channel.run(command, run)).lines;
      } catch (err) {
        this.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
        if (this.probeAnswered.has(command)) return { settings: 'lost', detail: `${command} answered ${describeFinal(err.final)} (it answered before)` };
        this.log.info({ command, final: err.final }, 'liveness probe: the modem refuses this query; using the next one');
        this.probeRefused.add(command);
        continue;
      }
      const settings = judge(lines);
      if (settings === 'intact') this.probeAnswered.add(command);
      const outcome = { settings, detail: `${command} -> ${lines.join(' | ') || 'OK'}` };
      if (!extra) return outcome;
      // The sample on its own line: one more command, on sample ticks only; its refusal does not fail the probe.
      try {
        const alone = await this.sampleAlone(extra, run);
        return { ...outcome, detail: `${outcome.detail}; ${alone.detail}`, ...alone.state };
      } catch (err) {
        this.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
        return { ...outcome, detail: `${outcome.detail}; AT${extra} answered ${describeFinal(err.final)}` };
      }
    }
    if (extra) {
      const alone = await this.sampleAlone(extra, run);
      return { settings: 'unknown', detail: `${alone.detail} (no setting can be read back on this modem)`, ...alone.state };
    }
    await this.channel.run('AT', run);
    return { settings: 'unknown', detail: 'AT -> OK (no setting can be read back on this modem)' };
  }

  /** The probe's sample (`AT+CSQ` or `AT+CREG?`) on its own line. */
  private async sampleAlone(extra: string, run: { timeoutMs: number } | undefined): Promise<{ detail: string; state: SampledState }> {
    const lines = (await this.channel.run(`AT${extra}`, { ...run, responsePrefixes: [extra.replace('?', '')] })).lines;
    return { detail: `AT${extra} -> ${lines.join(' | ')}`, state: sampled(extra === '+CSQ' ? 'signal' : 'registration', lines) };
  }

  /**
   * SIM use without a command when the last full listing is at most `maxAgeMs` old (kept current by deletes and new
   * SMS indications); undefined otherwise, or when init kept the modem's default storage (capacity unknown).
   * The sweep's storage check uses it: idle traffic stays at one AT+CMGL per sweep.
   */
  recentUsage(maxAgeMs: number, now: number = Date.now()): { used: number; total: number } | undefined {
    const capacity = this.state.capacities[2] ?? this.state.capacities[0];
    if (!this.listed || this.state.storage === undefined || !capacity || now - this.listed.at > maxAgeMs) return undefined;
    return { used: Math.max(0, Math.min(capacity.total, this.listed.used)), total: capacity.total };
  }

  /** An SMS command failed: +CMS ERROR 310-316 after init means the SIM was re-read (a restart). */
  private noteFailure(command: string, err: unknown): void {
    if (!this.initDone || !(err instanceof AtCommandError) || !isSimResetError(err.final, err.errorCode)) return;
    this.log.warn({ command, final: err.final }, 'SIM error on an SMS command after init: the modem may have restarted');
    this.emit('reset-suspected', { reason: `${command} answered ${describeFinal(err.final)}` });
  }

  /** channel.run for the SMS commands: failures are checked for signs of a restart, then rethrown. */
  private async runSms(command: string, timeoutMs: number, idleTimeoutMs?: number): Promise<AtResponse> {
    if (this.initDone) await this.ensureReadMemory();
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
    const memory = this.foreignMemory ?? this.state.storage;
    if (which === 'all' && this.foreignMemory === undefined) this.listed = { at: Date.now(), used: messages.length + skipped.length };
    if (which === 'all' && memory !== undefined) {
      const total = this.fills.get(memory)?.total;
      if (total !== undefined) this.noteFill(memory, { used: messages.length + skipped.length, total });
    }
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
      if (this.listed && this.foreignMemory === undefined) this.listed.used--;
      const memory = this.foreignMemory ?? this.state.storage;
      const fill = memory === undefined ? undefined : this.fills.get(memory);
      if (fill && fill.used > 0) fill.used--;
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
          this.log.warn({ command }, 'AT+CNMA: no acknowledgement expected (+CMS ERROR: 340); the network redelivers, the spool dedups');
          return;
        }
        if (command === 'AT+CNMA=0') {
          // TS 27.005: after a failed acknowledgement the modem may turn +CMT routing off (mt=0): turn it back on.
          if (this.state.cnmi) await this.at.tryLines(`AT+CNMI=${this.state.cnmi}`);
          throw err;
        }
        this.log.debug({ final: err instanceof AtCommandError ? err.final : undefined }, 'AT+CNMA refused; trying AT+CNMA=0');
      }
    }
  }

  // ---- sending --------------------------------------------------------------------------------------------------

  /** Sends prepared SMS-SUBMIT PDUs (one per part) and returns the message references (-1: none reported). */
  async sendSms(to: string, pdus: Array<{ pdu: string; tpduLength: number }>): Promise<number[]> {
    const refs: number[] = [];
    for (const [i, part] of pdus.entries()) {
      if (!isHex(part.pdu) || !Number.isInteger(part.tpduLength) || part.tpduLength <= 0 || part.tpduLength * 2 > part.pdu.length) {
        throw new BridgeError('PDU_INVALID', `${this.name}: SMS part ${i + 1}/${pdus.length} to ${to} is not a valid PDU`);
      }
      const command = `AT+CMGS=${part.tpduLength}`;
      let res: AtResponse;
      try {
        res = await this.channel.runWithPrompt(command, part.pdu, { timeoutMs: 60_000 });
      } catch (err) {
        this.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError)) throw err;
        throw new AtCommandError(err.code as 'AT_ERROR' | 'AT_TIMEOUT', `${this.name}: sending SMS to ${to} failed at part ${i + 1}/${pdus.length}: ${describeFinal(err.final)}`, {
          command,
          final: err.final,
          errorCode: err.errorCode,
          lines: err.lines,
          cause: err,
        });
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
    const ctx = { profile: this.currentProfile, initDone: this.initDone, storage: this.state.storage, resetHints: ANY_RESET_HINTS };
    this.emit('urc', urc);
    if (urc.name === 'cusd') this.ussdSession.onCusd(urc);
    for (const event of this.urcEvents.map(urc, ctx)) {
      if (event.name === 'reboot') this.initDone = false;
      if (event.name === 'sms' && this.listed && (event.info.storage === '' || event.info.storage === this.state.storage)) this.listed.used++;
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
