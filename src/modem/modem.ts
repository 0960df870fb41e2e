/**
 * The generic 3GPP modem over one AtChannel: init (identify, profile, SIM, PDU mode, storage, CNMI), status queries,
 * stored-SMS list/read/delete, direct-delivery acknowledgement, USSD sessions and SMS sending. Vendor behaviour comes
 * only from the ModemProfile (data).
 * Invariants:
 * - Never deletes or acknowledges anything on its own: the owner calls deleteSms / acknowledgeDirect after its
 *   durable write. Indexes are used exactly as the modem reports them (0-based on some modems).
 * - The configured PIN is sent once per Modem and never logged; a rejected PIN is not retried (a third wrong PIN
 *   locks the SIM).
 * - A SIM problem is a BridgeError SIM_NOT_READY with an actionable message (a state, not a crash).
 * - One USSD session at a time; the +CUSD listener is armed before the command is sent.
 * - Status queries (info) tolerate single failures; only a closed port makes them throw.
 */
import { EventEmitter } from 'node:events';
import type { AtChannel, AtResponse, Urc, UrcEntry } from '../at/types.js';
import { AtCommandError, BridgeError, PortError } from '../errors.js';
import type { Logger } from '../log.js';
import { packGsm7 as packGsm7Hex } from '../sms/gsm7.js';
import type { StoredPdu } from '../sms/types.js';
import { describeFinal } from './error-codes.js';
import {
  adaptCnmiForDelivery,
  chooseCnmi,
  extractId,
  genericCnmiFallbacks,
  infoValue,
  parseCmgl,
  parseCmgr,
  parseCmgs,
  parseCnmiRanges,
  parseCnum,
  parseCopsName,
  parseCpmsQuery,
  parseCpmsSet,
  parseCpmsSupported,
  parseCsca,
  parseCsq,
  parseRegistrationQuery,
  plainAnswer,
  type Registration,
  type SignalQuality,
  type StorageUsage,
} from './parse.js';
import { detectProfile, generic, getProfile, PROFILES } from './profiles/index.js';
import type { ModemProfile, ProfileId } from './types.js';
import { buildUrcTable, GENERIC_URCS } from './urcs.js';
import { continueCusd, decodeUssdPayload, isHex, parseCusdLine, type CusdLine } from './ussd-codec.js';

export type { Registration, SignalQuality, StorageUsage };

/** AT+CIMI attempts (pollIntervalMs apart) before the SIM counts as not ready. */
const IMSI_ATTEMPTS = 5;

export interface ModemOptions {
  channel: AtChannel;
  /** Name used in logs and error messages (config modems[].name). */
  name: string;
  logger: Logger;
  pin?: string;
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
}

export interface ModemIdentity {
  manufacturer: string;
  model: string;
  revision: string;
  imei: string | undefined;
  imsi: string | undefined;
  iccid: string | undefined;
  /** Own number when the SIM stores it (AT+CNUM); often absent. */
  msisdn: string | undefined;
  profile: ProfileId;
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

export interface UssdReply {
  /** 0 done, 1 further input needed, 2 ended by network, 3 answered by another client, 4 not supported, 5 timeout. */
  status: number;
  text: string;
  dcs?: number;
  /** The +CUSD line(s) as received ('' when the reply was an error result). */
  raw: string;
}

export type ModemEvents = {
  sms: [info: { storage: string; index: number }];
  'sms-direct': [info: { pdu: string; length: number }];
  'status-report': [info: { pdu: string; length: number } | { storage: string; index: number }];
  reboot: [info: { urc: string }];
  'storage-full': [info: { urc: string; storage: string | undefined }];
  ussd: [reply: UssdReply];
  urc: [urc: Urc];
};

const USSD_STATUS_TEXT: Readonly<Record<number, string>> = {
  0: 'USSD done',
  1: 'USSD needs further input',
  2: 'USSD session ended by the network',
  3: 'USSD answered by another client',
  4: 'USSD not supported by the network or the SIM (+CUSD: 4)',
  5: 'USSD timed out in the network',
};

/** Tried in order until one answers with an ICCID: 27.007 has none, every vendor has its own. */
const ICCID_COMMANDS = ['AT+CCID', 'AT+ICCID', 'AT+QCCID', 'AT+CICCID', 'AT^ICCID?'];

/** Before the profile is known: every vendor's URC rows (they have vendor prefixes and do not overlap) + generic. */
function detectionUrcTable(): UrcEntry[] {
  return [...PROFILES.flatMap((p) => p.urcs), ...GENERIC_URCS];
}

interface UssdWaiter {
  promise: Promise<UssdReply | undefined>;
  cancel(): void;
}

export class Modem extends EventEmitter<ModemEvents> {
  readonly name: string;
  private readonly channel: AtChannel;
  private readonly log: Logger;
  private readonly options: ModemOptions;
  private readonly pollIntervalMs: number;
  private currentProfile: ModemProfile;
  private finalResultsInstalled = new Set<ProfileId>();
  private currentIdentity: ModemIdentity | undefined;
  private initDone = false;
  private detected = false;
  private simState: string | undefined;
  private pinRejected = false;
  private cnmiSetting: string | undefined;
  /** 'direct' only when the modem accepted AT+CSMS=1 (see selectMessageService). */
  private effectiveDelivery: 'store' | 'direct' = 'store';
  private smsStorage: string | undefined;
  private capacities: Array<{ used: number; total: number }> = [];
  private readonly recentIndications = new Map<string, number>();
  private ussdBusy = false;
  private ussdOpen = false;
  private ussdDeliver: ((reply: UssdReply) => void) | undefined;
  private cusdPartial: { line: CusdLine; raw: string[]; timer: NodeJS.Timeout } | undefined;
  private readonly urcWaiters = new Set<(urc: Urc) => void>();

  constructor(options: ModemOptions) {
    super();
    this.options = options;
    this.name = options.name;
    this.channel = options.channel;
    this.log = options.logger.child({ modem: options.name });
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    const configured = options.profile;
    this.currentProfile = configured === undefined || configured === 'auto' ? generic : getProfile(configured);
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
    return this.cnmiSetting;
  }

  /** The SMS memory chosen by init ('SM', 'ME', 'MT'), undefined when the modem default was kept. */
  get storage(): string | undefined {
    return this.smsStorage;
  }

  /** Used / total slots of the chosen storage as AT+CPMS=... reported them at init. */
  get storageCapacity(): { used: number; total: number } | undefined {
    return this.capacities[0];
  }

  /** Removes the channel listeners (the channel itself is the owner's). */
  detach(): void {
    this.channel.off('urc', this.onUrc);
    this.channel.off('unexpected', this.onUnexpected);
    if (this.cusdPartial) clearTimeout(this.cusdPartial.timer);
    this.cusdPartial = undefined;
  }

  // ---- init -----------------------------------------------------------------------------------------------------

  async init(): Promise<ModemIdentity> {
    this.initDone = false;
    const configured = this.options.profile;
    const fixedProfile = configured !== undefined && configured !== 'auto';
    this.installTables();

    try {
      await this.channel.run('ATE0');
    } catch (err) {
      this.rethrowIfGone(err);
      if (err instanceof AtCommandError && err.code === 'AT_TIMEOUT') {
        throw new BridgeError('MODEM_SILENT', `${this.name}: no answer to ATE0`, {
          cause: err,
          hint: 'check the port path and baud rate; the modem may still be booting or be held by ModemManager',
        });
      }
      throw err;
    }
    await this.tryLines('AT+CMEE=1');

    const manufacturer = plainAnswer((await this.tryLines('AT+CGMI')) ?? []);
    const model = plainAnswer((await this.tryLines('AT+CGMM')) ?? []);
    const revision = plainAnswer((await this.tryLines('AT+CGMR')) ?? []);
    const imei = extractId((await this.tryLines('AT+CGSN')) ?? [], /\d{14,17}/);

    if (!fixedProfile) {
      this.currentProfile = detectProfile(manufacturer, model);
      this.detected = true;
      this.installTables();
    }
    this.log.info({ manufacturer, model, revision, profile: this.currentProfile.id }, 'modem identified');

    for (const command of this.currentProfile.initCommands) {
      const lines = await this.tryLines(command);
      if (lines === undefined) this.log.warn({ command }, 'profile init command failed; continuing');
    }

    await this.unlockSim();

    const imsi = await this.readImsi();
    const iccid = await this.readIccid();
    const msisdn = parseCnum((await this.tryLines('AT+CNUM')) ?? []);

    await this.enablePduMode();
    await this.selectStorage();
    await this.selectMessageService();
    await this.negotiateCnmi();

    this.currentIdentity = { manufacturer, model, revision, imei, imsi, iccid, msisdn, profile: this.currentProfile.id };
    this.initDone = true;
    this.log.info({ profile: this.currentProfile.id, storage: this.smsStorage, cnmi: this.cnmiSetting }, 'modem ready');
    return this.currentIdentity;
  }

  /**
   * Installs the URC table and extra final results. While the profile is still to be detected (profile 'auto',
   * before AT+CGMI), every vendor's rows are installed so their noise is recognised during identification.
   */
  private installTables(): void {
    const detecting = (this.options.profile ?? 'auto') === 'auto' && !this.detected;
    const profiles = detecting ? PROFILES : [this.currentProfile];
    this.channel.setUrcTable(detecting ? detectionUrcTable() : buildUrcTable(this.currentProfile));
    for (const profile of profiles) {
      if (profile.finalResults.length === 0 || this.finalResultsInstalled.has(profile.id)) continue;
      this.channel.addFinalResults(profile.finalResults);
      this.finalResultsInstalled.add(profile.id);
    }
  }

  private async readIccid(): Promise<string | undefined> {
    for (const command of ICCID_COMMANDS) {
      const lines = await this.tryLines(command);
      const iccid = lines && extractId(lines, /\d{18,20}F?/i);
      if (iccid) return iccid.toUpperCase();
    }
    return undefined;
  }

  // ---- SIM ------------------------------------------------------------------------------------------------------

  private simError(message: string, hint?: string): BridgeError {
    return new BridgeError('SIM_NOT_READY', `${this.name}: ${message}`, hint === undefined ? {} : { hint });
  }

  /** AT+CPIN? -> 'READY' | 'SIM PIN' | 'SIM PUK' | 'BUSY' | other state text. Throws SIM_NOT_READY for a missing/failed SIM. */
  private async querySim(): Promise<string> {
    const timeoutMs = this.currentProfile.cpinWithoutOk ? 3000 : undefined;
    let lines: readonly string[];
    try {
      lines = (await this.channel.run('AT+CPIN?', timeoutMs === undefined ? undefined : { timeoutMs })).lines;
    } catch (err) {
      this.rethrowIfGone(err);
      if (!(err instanceof AtCommandError)) throw err;
      // Wavecom: `+CPIN: READY` may come without OK: the answer is in the lines of the timed-out command.
      if (err.code === 'AT_TIMEOUT' && this.currentProfile.cpinWithoutOk && infoValue(err.lines, '+CPIN') !== undefined) {
        lines = err.lines;
      } else {
        switch (err.errorCode) {
          case 10:
            throw this.simError('no SIM card: AT+CPIN? answered +CME ERROR: 10 (SIM not inserted)', 'insert or reseat the SIM with the modem unplugged');
          case 11:
            return 'SIM PIN';
          case 12:
            return 'SIM PUK';
          case 13:
          case 15:
            throw this.simError(`SIM failure: AT+CPIN? answered ${describeFinal(err.final)}`, 'reseat or replace the SIM');
          case 14:
            return 'BUSY';
          default:
            throw this.simError(`SIM state unknown: AT+CPIN? answered ${describeFinal(err.final)}`);
        }
      }
    }
    const state = infoValue(lines, '+CPIN');
    if (state === undefined) throw this.simError(`SIM state unknown: AT+CPIN? answered ${JSON.stringify(lines.join(' | '))}`);
    return state.replace(/"/g, '').trim().toUpperCase();
  }

  private async unlockSim(): Promise<void> {
    if (this.pinRejected) {
      throw this.simError('the SIM rejected the configured PIN earlier; not retried', 'fix modems[].pin and restart the bridge (a third wrong PIN locks the SIM)');
    }
    let pinSent = false;
    const attempts = 10;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const state = await this.querySim();
      this.simState = state;
      if (state === 'READY') return;
      if (state === 'SIM PIN') {
        if (this.options.pin === undefined || this.options.pin === '') {
          throw this.simError('SIM needs a PIN: set modems[].pin', 'or remove the PIN lock with a phone');
        }
        if (!pinSent) {
          await this.enterPin(this.options.pin);
          pinSent = true;
        }
      } else if (state === 'SIM PUK' || state === 'SIM PUK2') {
        throw this.simError('SIM is PUK-locked (too many wrong PINs)', 'unlock it in a phone with the PUK code from the SIM card holder');
      } else if (state !== 'BUSY') {
        throw this.simError(`SIM not ready: +CPIN: ${state}`);
      }
      await this.delay(this.pollIntervalMs);
    }
    throw this.simError(`SIM still not ready after ${attempts} checks (last state: ${this.simState ?? 'unknown'})`);
  }

  private async enterPin(pin: string): Promise<void> {
    this.log.info('entering the configured SIM PIN');
    try {
      await this.channel.run(`AT+CPIN="${pin}"`);
    } catch (err) {
      this.rethrowIfGone(err);
      // No cause attached and no err.message used: the failed command text contains the PIN.
      const final = err instanceof AtCommandError ? err.final : undefined;
      const code = err instanceof AtCommandError ? err.errorCode : undefined;
      if (code === 16) {
        this.pinRejected = true;
        throw this.simError('the SIM rejected the configured PIN (+CME ERROR: 16 incorrect password)', 'fix modems[].pin; it will not be tried again until restart (a third wrong PIN locks the SIM)');
      }
      if (code === 12) throw this.simError('SIM is PUK-locked (too many wrong PINs)', 'unlock it in a phone with the PUK code');
      throw this.simError(`entering the PIN failed: ${describeFinal(final)}`);
    }
  }

  // ---- SMS service ----------------------------------------------------------------------------------------------

  private async enablePduMode(): Promise<void> {
    const ready = this.currentProfile.smsReady;
    if (!ready) {
      await this.channel.run('AT+CMGF=0');
      return;
    }
    const timeoutMs = this.options.smsReadyTimeoutMs ?? ready.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await this.channel.run('AT+CMGF=0');
        return;
      } catch (err) {
        this.rethrowIfGone(err);
        const final = err instanceof AtCommandError ? err.final : undefined;
        if (Date.now() >= deadline) {
          throw new BridgeError('SIM_NOT_READY', `${this.name}: SMS service not ready after ${Math.round(timeoutMs / 1000)} s (AT+CMGF=0 answered ${describeFinal(final)})`, {
            cause: err,
            hint: 'the modem may be restarting or lack network/SIM; it is retried on the next init',
          });
        }
        this.log.debug({ final, waitingFor: ready.urc }, 'SMS service not ready yet (AT+CMGF=0 refused); waiting');
      }
      await this.waitForUrc(ready.urc, Math.max(0, Math.min(this.pollIntervalMs, deadline - Date.now())));
    }
  }

  private async selectStorage(): Promise<void> {
    const wanted = this.options.storage;
    const preference: string[] = wanted === undefined || wanted === 'auto' ? [...this.currentProfile.storagePreference] : [wanted];
    const supported = parseCpmsSupported((await this.tryLines('AT+CPMS=?')) ?? []);
    const mem1 = supported[0];
    const mem3 = supported[2] ?? mem1;
    const candidates = mem1 ? preference.filter((m) => mem1.includes(m) && (mem3 ?? mem1).includes(m)) : preference;
    if (candidates.length === 0) {
      this.log.warn({ wanted: preference, supported }, 'no preferred SMS storage is supported; keeping the modem default');
    }
    for (const memory of candidates) {
      const lines = await this.tryLines(`AT+CPMS="${memory}","${memory}","${memory}"`);
      if (lines === undefined) continue;
      this.smsStorage = memory;
      this.capacities = parseCpmsSet(lines);
      this.log.info({ storage: memory, capacity: this.capacities[0] }, 'SMS storage selected');
      return;
    }
    this.smsStorage = undefined;
    if (candidates.length > 0) this.log.warn({ tried: candidates }, 'no SMS storage could be selected; keeping the modem default');
  }

  /**
   * The IMSI is the SIM identity in every record id: an id that changed between sessions (IMSI read once, not the next
   * time) would let a re-read SMS be spooled twice. So it is required: retried while the SIM is busy after boot, and
   * its absence is a SIM_NOT_READY state (the supervisor retries), never a silent fallback.
   */
  private async readImsi(): Promise<string> {
    for (let attempt = 1; attempt <= IMSI_ATTEMPTS; attempt++) {
      const imsi = extractId((await this.tryLines('AT+CIMI')) ?? [], /\d{6,15}/);
      if (imsi) return imsi;
      if (attempt < IMSI_ATTEMPTS) await this.delay(this.pollIntervalMs);
    }
    throw new BridgeError('SIM_NOT_READY', `${this.name}: cannot read the SIM's IMSI (AT+CIMI)`, {
      hint: 'the SIM may still be starting (it is retried) or be faulty; `pulsa-bridge at --port P AT+CIMI` shows the answer',
    });
  }

  /**
   * Direct delivery (+CMT) is only safe when the modem waits for our AT+CNMA: that is message service 1 (AT+CSMS=1,
   * 3GPP TS 27.005 3.2.1). In service 0 the modem acknowledges +CMT to the network itself, before the spool write, and
   * a crash then loses the SMS. When service 1 is refused, fall back to store mode (+CMTI), loudly.
   */
  private async selectMessageService(): Promise<void> {
    this.effectiveDelivery = this.options.delivery ?? 'store';
    if (this.effectiveDelivery !== 'direct') return;
    const lines = await this.tryLines('AT+CSMS=1');
    const support = lines && /\+CSMS:\s*(\d)/.exec(lines.join(' '));
    if (support && support[1] === '1') return;
    this.effectiveDelivery = 'store';
    this.log.error(
      { answer: lines },
      'direct delivery needs AT+CSMS=1 (the modem holds +CMT until AT+CNMA) and this modem refused it: using store mode (+CMTI, read, delete) instead',
    );
  }

  private async negotiateCnmi(): Promise<void> {
    const delivery = this.effectiveDelivery;
    const ranges = parseCnmiRanges((await this.tryLines('AT+CNMI=?')) ?? []);
    const negotiated = ranges ? chooseCnmi(ranges, delivery) : undefined;
    if (ranges && !negotiated) this.log.warn({ ranges }, 'AT+CNMI=? offers no usable mode/mt; trying fallbacks');
    const candidates = [
      ...(negotiated ? [negotiated] : []),
      ...this.currentProfile.cnmiFallbacks.map((c) => adaptCnmiForDelivery(c, delivery)),
      ...genericCnmiFallbacks(delivery),
    ].filter((c, i, all) => all.indexOf(c) === i);
    for (const setting of candidates) {
      const lines = await this.tryLines(`AT+CNMI=${setting}`);
      if (lines === undefined) continue;
      this.cnmiSetting = setting;
      this.log.info({ cnmi: setting, negotiated: setting === negotiated }, 'new-message indications enabled');
      return;
    }
    this.cnmiSetting = undefined;
    this.log.error({ tried: candidates }, 'no AT+CNMI setting accepted: new SMS will only be found by polling');
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
      this.rethrowIfGone(err);
      cregError = err;
    }
    if (creg?.registered) return creg;
    const eps = await this.tryLines('AT+CEREG?');
    const cereg = eps && parseRegistrationQuery(eps, 'CEREG');
    if (cereg && (cereg.registered || !creg)) return cereg;
    if (creg) return creg;
    throw new BridgeError('AT_ERROR', `${this.name}: registration unknown (AT+CREG? and AT+CEREG? gave no answer)`, { cause: cregError });
  }

  async storageUsage(): Promise<StorageUsage[]> {
    return parseCpmsQuery((await this.channel.run('AT+CPMS?')).lines);
  }

  async info(): Promise<ModemInfo> {
    const errors: string[] = [];
    const attempt = async <T>(label: string, fn: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await fn();
      } catch (err) {
        this.rethrowIfGone(err);
        errors.push(`${label}: ${err instanceof AtCommandError ? describeFinal(err.final) : err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    };
    const simState = await attempt('sim', async () => {
      const s = await this.querySim();
      this.simState = s;
      return s;
    });
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
      cnmi: this.cnmiSetting,
      errors,
    };
  }

  // ---- stored SMS -----------------------------------------------------------------------------------------------

  async listSms(which: 'all' | 'unread' = 'all'): Promise<StoredPdu[]> {
    const res = await this.channel.run(`AT+CMGL=${which === 'all' ? 4 : 0}`, { timeoutMs: 60_000 });
    const { messages, skipped } = parseCmgl(res.lines);
    if (skipped.length > 0) this.log.error({ skipped }, 'AT+CMGL lines that could not be read were skipped');
    return messages;
  }

  /** The SMS in slot `index`, or undefined when the slot is empty (+CMS ERROR: 321 included). */
  async readSms(index: number): Promise<StoredPdu | undefined> {
    let res: AtResponse;
    try {
      res = await this.channel.run(`AT+CMGR=${index}`, { timeoutMs: 15_000 });
    } catch (err) {
      if (err instanceof AtCommandError && err.errorCode === 321) return undefined;
      throw err;
    }
    return parseCmgr(res.lines, index);
  }

  /** Deletes slot `index`; an already empty slot (+CMS ERROR: 321) counts as deleted. */
  async deleteSms(index: number): Promise<void> {
    try {
      await this.channel.run(`AT+CMGD=${index}`, { timeoutMs: 15_000 });
    } catch (err) {
      if (!(err instanceof AtCommandError && err.errorCode === 321)) throw err;
      this.log.debug({ index }, 'AT+CMGD: slot already empty (+CMS ERROR: 321), counted as deleted');
    }
    for (const key of this.recentIndications.keys()) if (key.endsWith(`:${index}`)) this.recentIndications.delete(key);
  }

  /** Acknowledges a +CMT (direct delivery). +CMS ERROR: 340 (no acknowledgement expected) is logged and accepted. */
  async acknowledgeDirect(): Promise<void> {
    for (const command of ['AT+CNMA', 'AT+CNMA=0']) {
      try {
        await this.channel.run(command);
        return;
      } catch (err) {
        this.rethrowIfGone(err);
        if (err instanceof AtCommandError && err.errorCode === 340) {
          // Too late: the modem stopped waiting and the network will deliver the SMS again (same record id).
          this.log.warn({ command }, 'AT+CNMA: no acknowledgement expected (+CMS ERROR: 340); the network redelivers, the spool dedups');
          return;
        }
        if (command === 'AT+CNMA=0') {
          // TS 27.005: after a failed acknowledgement the modem may turn +CMT routing off (mt=0): turn it back on.
          if (this.cnmiSetting) await this.tryLines(`AT+CNMI=${this.cnmiSetting}`);
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
        this.rethrowIfGone(err);
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
  async ussd(code: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    if (this.ussdBusy) throw new BridgeError('USSD', `${this.name}: a USSD request is already in progress`);
    if (this.ussdOpen) {
      throw new BridgeError('USSD', `${this.name}: a USSD session is waiting for input`, { hint: 'answer it with ussdReply() or end it with ussdCancel()' });
    }
    return this.ussdExchange(code, options);
  }

  /** Answers a USSD session that asked for input (status 1). */
  async ussdReply(text: string, options: { timeoutMs?: number } = {}): Promise<UssdReply> {
    if (this.ussdBusy) throw new BridgeError('USSD', `${this.name}: a USSD request is already in progress`);
    if (!this.ussdOpen) throw new BridgeError('USSD', `${this.name}: no USSD session is waiting for input`);
    return this.ussdExchange(text, options);
  }

  /** Ends the USSD session (AT+CUSD=2). A refusal is logged: many modems answer ERROR when no session is open. */
  async ussdCancel(): Promise<void> {
    this.ussdOpen = false;
    try {
      await this.channel.run('AT+CUSD=2');
    } catch (err) {
      this.rethrowIfGone(err);
      this.log.warn({ final: err instanceof AtCommandError ? err.final : undefined }, 'AT+CUSD=2 refused (no session open?)');
    }
  }

  private ussdCommand(text: string): string {
    if (/["\r\n\x1a]/.test(text)) throw new BridgeError('USSD', `${this.name}: USSD string ${JSON.stringify(text)} contains a quote or control character`);
    const how = this.currentProfile.ussd.send;
    if (how === 'atd') return `ATD${text};`;
    if (how === 'packed-hex') {
      try {
        return `AT+CUSD=1,"${packGsm7Hex(text)}",15`;
      } catch (err) {
        throw new BridgeError('USSD', `${this.name}: USSD string ${JSON.stringify(text)} cannot be sent as GSM 7-bit`, { cause: err });
      }
    }
    return `AT+CUSD=1,"${text}",15`;
  }

  private async ussdExchange(text: string, options: { timeoutMs?: number }): Promise<UssdReply> {
    this.ussdBusy = true;
    const timeoutMs = options.timeoutMs ?? this.options.ussdTimeoutMs ?? 30_000;
    try {
      const command = this.ussdCommand(text);
      const charset = this.currentProfile.ussd.charset;
      if (this.currentProfile.ussd.send === 'text' && charset !== undefined) {
        if ((await this.tryLines(`AT+CSCS="${charset}"`)) === undefined) this.log.warn({ charset }, 'AT+CSCS refused; sending USSD in the current charset');
      }
      const waiter = this.armUssdWaiter(timeoutMs);
      let res: AtResponse;
      try {
        res = await this.channel.run(command, { timeoutMs });
      } catch (err) {
        waiter.cancel();
        this.rethrowIfGone(err);
        if (err instanceof AtCommandError && err.errorCode !== undefined && err.errorCode >= 132 && err.errorCode <= 134) {
          this.ussdOpen = false;
          return { status: 4, text: `USSD not supported by the network or the SIM: ${describeFinal(err.final)}`, raw: err.final ?? '' };
        }
        const final = err instanceof AtCommandError ? err.final : undefined;
        throw new BridgeError('USSD', `${this.name}: USSD ${text} failed: ${describeFinal(final)}`, { cause: err });
      }
      // A reply string with CR/LF inside may have spilled into the command's own lines.
      if (this.cusdPartial) for (const line of res.lines) this.feedCusd(line);
      const reply = await waiter.promise;
      if (!reply) {
        this.ussdOpen = false;
        await this.tryLines('AT+CUSD=2');
        throw new BridgeError('USSD', `${this.name}: no USSD reply to ${text} within ${Math.round(timeoutMs / 1000)} s`, {
          hint: 'check the code and network registration; some modems need ATD<code>; (profile ussd.send)',
        });
      }
      this.ussdOpen = reply.status === 1;
      return reply;
    } finally {
      this.ussdBusy = false;
    }
  }

  private armUssdWaiter(timeoutMs: number): UssdWaiter {
    let timer: NodeJS.Timeout | undefined;
    let settle: (reply: UssdReply | undefined) => void = () => undefined;
    const promise = new Promise<UssdReply | undefined>((resolve) => {
      settle = resolve;
    });
    const done = (reply: UssdReply | undefined): void => {
      if (timer) clearTimeout(timer);
      if (this.ussdDeliver === deliver) this.ussdDeliver = undefined;
      settle(reply);
    };
    const deliver = (reply: UssdReply): void => done(reply);
    this.ussdDeliver = deliver;
    timer = setTimeout(() => done(undefined), timeoutMs);
    return { promise, cancel: () => done(undefined) };
  }

  private onCusdUrc(urc: Urc): void {
    const line = urc.lines[0] ?? '';
    const parsed = parseCusdLine(line);
    if (!parsed) {
      this.log.error({ line }, 'unreadable +CUSD line');
      return;
    }
    if (this.cusdPartial) this.flushCusdPartial('a new +CUSD arrived');
    if (!parsed.complete) {
      // The quoted string continues on the next line(s): collect them (bounded by a short grace period).
      const timer = setTimeout(() => this.flushCusdPartial('its closing quote never arrived'), 2000);
      this.cusdPartial = { line: parsed, raw: [line], timer };
      return;
    }
    this.deliverCusd(parsed, [line]);
  }

  private feedCusd(line: string): void {
    const partial = this.cusdPartial;
    if (!partial) return;
    partial.line = continueCusd(partial.line, line);
    partial.raw.push(line);
    if (partial.line.complete) {
      clearTimeout(partial.timer);
      this.cusdPartial = undefined;
      this.deliverCusd(partial.line, partial.raw);
    }
  }

  private flushCusdPartial(reason: string): void {
    const partial = this.cusdPartial;
    if (!partial) return;
    clearTimeout(partial.timer);
    this.cusdPartial = undefined;
    this.log.warn({ reason }, 'USSD reply string did not close; using what arrived');
    this.deliverCusd(partial.line, partial.raw);
  }

  private deliverCusd(line: CusdLine, raw: string[]): void {
    const text =
      line.payload === undefined
        ? (USSD_STATUS_TEXT[line.status] ?? `USSD status ${line.status}`)
        : decodeUssdPayload(line.payload, line.dcs, { packed: this.currentProfile.ussd.send === 'packed-hex' }).text;
    const reply: UssdReply = { status: line.status, text, raw: raw.join('\n') };
    if (line.dcs !== undefined) reply.dcs = line.dcs;
    const deliver = this.ussdDeliver;
    if (deliver) {
      deliver(reply);
      return;
    }
    // Network-initiated (or a late reply after a timeout).
    this.ussdOpen = line.status === 1;
    this.emit('ussd', reply);
  }

  // ---- URCs -----------------------------------------------------------------------------------------------------

  private readonly onUnexpected = (line: string): void => {
    if (this.cusdPartial) this.feedCusd(line);
  };

  private readonly onUrc = (urc: Urc): void => {
    const profile = this.currentProfile;
    this.emit('urc', urc);
    for (const waiter of [...this.urcWaiters]) waiter(urc);
    switch (urc.name) {
      case 'cmti': {
        const { storage, index } = urc.data;
        if (typeof index !== 'number' || !Number.isInteger(index)) {
          this.log.error({ lines: urc.lines }, '+CMTI without a usable index; the next poll will find the SMS');
          break;
        }
        const where = typeof storage === 'string' ? storage : (this.smsStorage ?? '');
        if (profile.duplicateIndications && this.isDuplicateIndication(`${where}:${index}`)) {
          this.log.debug({ storage: where, index }, 'duplicate +CMTI ignored (device reports each SMS twice)');
          break;
        }
        this.emit('sms', { storage: where, index });
        break;
      }
      case 'cmt': {
        const { pdu, length } = urc.data;
        if (typeof pdu === 'string' && isHex(pdu) && typeof length === 'number') this.emit('sms-direct', { pdu: pdu.toUpperCase(), length });
        else this.log.error({ lines: urc.lines }, '+CMT without a readable PDU');
        break;
      }
      case 'cds': {
        const { pdu, length } = urc.data;
        if (typeof pdu === 'string' && isHex(pdu) && typeof length === 'number') this.emit('status-report', { pdu: pdu.toUpperCase(), length });
        else this.log.error({ lines: urc.lines }, '+CDS without a readable PDU');
        break;
      }
      case 'cdsi': {
        const { storage, index } = urc.data;
        if (typeof index === 'number') this.emit('status-report', { storage: typeof storage === 'string' ? storage : '', index });
        break;
      }
      case 'cusd':
        this.onCusdUrc(urc);
        break;
      default:
        break;
    }
    if (this.initDone && profile.rebootUrcs.includes(urc.name)) {
      this.initDone = false;
      this.log.warn({ urc: urc.name }, 'modem restarted (boot banner after init); init must run again');
      this.emit('reboot', { urc: urc.name });
    }
    if (profile.storageFullUrcs.includes(urc.name)) {
      const storage = typeof urc.data.storage === 'string' ? urc.data.storage : undefined;
      this.log.warn({ urc: urc.name, storage }, 'SMS storage full');
      this.emit('storage-full', { urc: urc.name, storage });
    }
  };

  private isDuplicateIndication(key: string): boolean {
    const now = Date.now();
    const windowMs = this.options.duplicateWindowMs ?? 10_000;
    for (const [k, at] of this.recentIndications) if (now - at > windowMs) this.recentIndications.delete(k);
    if (this.recentIndications.has(key)) return true;
    this.recentIndications.set(key, now);
    return false;
  }

  // ---- helpers --------------------------------------------------------------------------------------------------

  /** Runs a command whose failure is tolerated: logged, undefined returned. A closed port still throws. */
  private async tryLines(command: string, timeoutMs?: number): Promise<readonly string[] | undefined> {
    try {
      return (await this.channel.run(command, timeoutMs === undefined ? undefined : { timeoutMs })).lines;
    } catch (err) {
      this.rethrowIfGone(err);
      this.log.debug({ command, final: err instanceof AtCommandError ? err.final : undefined, code: err instanceof BridgeError ? err.code : undefined }, 'command failed (tolerated)');
      return undefined;
    }
  }

  private rethrowIfGone(err: unknown): void {
    if (this.channel.isOpen) return;
    if (err instanceof PortError) throw err;
    throw new PortError('PORT_CLOSED', `${this.name}: the modem port is closed`, { cause: err });
  }

  private waitForUrc(name: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const waiter = (urc: Urc): void => {
        if (urc.name !== name) return;
        finish();
      };
      const finish = (): void => {
        clearTimeout(timer);
        this.urcWaiters.delete(waiter);
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      this.urcWaiters.add(waiter);
    });
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
