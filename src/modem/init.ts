/**
 * Modem init, step by step: echo off, verbose errors, identification and profile detection, the profile's init
 * commands, SIM unlock, IMSI / ICCID / own number, PDU mode, storage, message service and AT+CNMI. Vendor behaviour
 * comes only from the profile. The IMSI is required (the SIM identity of every record id): its absence is
 * SIM_NOT_READY, never a fallback. Direct delivery (+CMT) only when the modem accepted AT+CSMS=1. What it learns goes
 * into the modem's InitState as it goes.
 */
import { listen, orTimeout, waitFor } from '../at/wait.js';
import type { Urc } from '../at/types.js';
import { AtCommandError, BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import {
  adaptCnmiForDelivery,
  chooseCnmi,
  extractId,
  genericCnmiFallbacks,
  parseCnmiRanges,
  parseCnum,
  parseCpmsSet,
  parseCpmsSupported,
  plainAnswer,
} from './parse.js';
import { detectProfile } from './profiles/index.js';
import { readIccid, type SimUnlock } from './sim-unlock.js';
import type { ModemProfile, ProfileId } from './types.js';

/**
 * ATE0 while the modem may still be booting (a replug, a reset): short tries, so init starts as soon as it answers
 * rather than after one long timeout (bench/README.md, Self-healing: a replug).
 */
const ATE0_TRY_MS = 1000;
const ATE0_TRIES = 10;

/** AT+CIMI attempts (pollIntervalMs apart) before the SIM counts as not ready. */
const IMSI_ATTEMPTS = 5;

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

/** What init found out, kept by the modem between inits. */
export interface InitState {
  /** The SMS memory chosen ('SM', 'ME', 'MT'), undefined when the modem default was kept. */
  storage: string | undefined;
  /** Used / total per memory as AT+CPMS=... reported them. */
  capacities: Array<{ used: number; total: number }>;
  /** The memories AT+CPMS=? offers for reading (mem1), e.g. ['SM', 'ME', 'MT', 'SR']; empty when it said nothing. */
  offered?: string[];
  /** The CNMI setting applied, undefined when none was accepted (polling only). */
  cnmi: string | undefined;
  /** 'direct' only when the modem accepted AT+CSMS=1. */
  delivery: 'store' | 'direct';
  /** The AT+CMEE level set (1), undefined when the modem refused it. The liveness probe may read it back. */
  cmee?: number | undefined;
}

export interface InitSettings {
  storage?: 'SM' | 'ME' | 'MT' | 'auto';
  delivery?: 'store' | 'direct';
  smsReadyTimeoutMs?: number;
}

export interface InitContext {
  at: ModemAt;
  name: string;
  log: Logger;
  settings: InitSettings;
  pollIntervalMs: number;
  sim: SimUnlock;
  state: InitState;
  /** The profile in use (a fixed one, or generic until detected). */
  profile(): ModemProfile;
  /** When the profile is 'auto': called with the detected profile (the modem installs its tables). Absent when fixed. */
  detected?: (profile: ModemProfile) => void;
  delay: (ms: number) => Promise<void>;
}

export async function runInit(ctx: InitContext): Promise<ModemIdentity> {
  const { at, log } = ctx;
  for (let attempt = 1; ; attempt++) {
    try {
      await at.channel.run('ATE0', { timeoutMs: ATE0_TRY_MS });
      break;
    } catch (err) {
      at.rethrowIfGone(err);
      // A stick just plugged in may answer its first commands `+CME ERROR: SIM busy` (14) or 515: it is booting.
      const booting =
        err instanceof AtCommandError && err.code === 'AT_ERROR' && (err.errorCode === 14 || err.errorCode === 515);
      if (!(err instanceof AtCommandError) || !(err.code === 'AT_TIMEOUT' || booting)) throw err;
      if (attempt < ATE0_TRIES) {
        log.debug(
          { attempt, answer: booting ? err.final : undefined },
          'ATE0 not served yet (the modem may be booting); trying again',
        );
        if (booting) await ctx.delay(ctx.pollIntervalMs);
        continue;
      }
      if (booting) throw err; // still busy after every try: the supervisor retries init later
      throw new BridgeError('MODEM_SILENT', `${ctx.name}: no answer to ATE0`, {
        cause: err,
        hint: 'check the port path and baud rate; the modem may still be booting or be held by ModemManager',
      });
    }
  }
  ctx.state.cmee = (await at.tryLines('AT+CMEE=1')) === undefined ? undefined : 1;

  const manufacturer = plainAnswer((await at.tryLines('AT+CGMI')) ?? []);
  const model = plainAnswer((await at.tryLines('AT+CGMM')) ?? []);
  const revision = plainAnswer((await at.tryLines('AT+CGMR')) ?? []);
  const imei = extractId((await at.tryLines('AT+CGSN')) ?? [], /\d{14,17}/);

  if (ctx.detected) ctx.detected(detectProfile(manufacturer, model));
  const profile = ctx.profile();
  log.info({ manufacturer, model, revision, profile: profile.id }, 'modem identified');

  for (const command of profile.initCommands) {
    const lines = await at.tryLines(command);
    if (lines === undefined) log.warn({ command }, 'profile init command failed; continuing');
  }

  await ctx.sim.unlock(profile);

  const imsi = await readImsi(ctx);
  const iccid = await readIccid(at, profile);
  const msisdn = parseCnum((await at.tryLines('AT+CNUM')) ?? []);

  await enablePduMode(ctx, profile);
  await selectStorage(ctx, profile);
  await selectMessageService(ctx);
  await negotiateCnmi(ctx, profile);

  return { manufacturer, model, revision, imei, imsi, iccid, msisdn, profile: profile.id };
}

/**
 * The IMSI is the SIM identity in every record id: an id that changed between sessions (IMSI read once, not the next
 * time) would let a re-read SMS be spooled twice. So it is required: retried while the SIM is busy after boot, and
 * its absence is a SIM_NOT_READY state (the supervisor retries), never a silent fallback.
 */
async function readImsi(ctx: InitContext): Promise<string> {
  for (let attempt = 1; attempt <= IMSI_ATTEMPTS; attempt++) {
    const imsi = extractId((await ctx.at.tryLines('AT+CIMI')) ?? [], /\d{6,15}/);
    if (imsi) return imsi;
    if (attempt < IMSI_ATTEMPTS) await ctx.delay(ctx.pollIntervalMs);
  }
  throw new BridgeError('SIM_NOT_READY', `${ctx.name}: cannot read the SIM's IMSI (AT+CIMI)`, {
    hint: 'the SIM may still be starting (it is retried) or be faulty; `pulsa-bridge at --port P AT+CIMI` shows the answer',
  });
}

async function enablePduMode(ctx: InitContext, profile: ModemProfile): Promise<void> {
  const { at } = ctx;
  const ready = profile.smsReady;
  if (!ready) {
    await at.channel.run('AT+CMGF=0');
    return;
  }
  const timeoutMs = ctx.settings.smsReadyTimeoutMs ?? ready.timeoutMs;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await at.channel.run('AT+CMGF=0');
      return;
    } catch (err) {
      at.rethrowIfGone(err);
      const final = err instanceof AtCommandError ? err.final : undefined;
      if (Date.now() >= deadline) {
        throw new BridgeError(
          'SIM_NOT_READY',
          `${ctx.name}: SMS service not ready after ${Math.round(timeoutMs / 1000)} s (AT+CMGF=0 answered ${describeFinal(final)})`,
          {
            cause: err,
            hint: 'the modem may be restarting or lack network/SIM; it is retried on the next init',
          },
        );
      }
      ctx.log.debug({ final, waitingFor: ready.urc }, 'SMS service not ready yet (AT+CMGF=0 refused); waiting');
    }
    // A pause that ends early when the "SMS ready" banner arrives.
    const pauseMs = Math.max(0, Math.min(ctx.pollIntervalMs, deadline - Date.now()));
    await orTimeout(
      waitFor(
        listen<Urc>(at.channel, 'urc'),
        (urc) => urc.name === ready.urc || (ready.alsoUrcs ?? []).includes(urc.name),
        { timeoutMs: pauseMs, what: `the ${ready.urc} URC` },
      ).promise,
    );
  }
}

async function selectStorage(ctx: InitContext, profile: ModemProfile): Promise<void> {
  const { at, log, state } = ctx;
  const wanted = ctx.settings.storage;
  const preference: string[] = wanted === undefined || wanted === 'auto' ? [...profile.storagePreference] : [wanted];
  const supported = parseCpmsSupported((await at.tryLines('AT+CPMS=?')) ?? []);
  state.offered = [...(supported[0] ?? [])].map((m) => m.toUpperCase());
  const mem1 = supported[0];
  const mem3 = supported[2] ?? mem1;
  const candidates = mem1 ? preference.filter((m) => mem1.includes(m) && (mem3 ?? mem1).includes(m)) : preference;
  if (candidates.length === 0) {
    log.warn({ wanted: preference, supported }, 'no preferred SMS storage is supported; keeping the modem default');
  }
  // As many memories as AT+CPMS=? has groups (Wavecom Multiband offers two and refuses a third: python-gsmmodem
  // fakemodems.py); a refusal of the full form is tried again with fewer.
  const slots = supported.length >= 1 && supported.length <= 3 ? supported.length : 3;
  for (const memory of candidates) {
    let lines: readonly string[] | undefined;
    for (let n = slots; n >= 1 && lines === undefined; n--)
      lines = await at.tryLines(`AT+CPMS=${Array(n).fill(`"${memory}"`).join(',')}`);
    if (lines === undefined) continue;
    state.storage = memory;
    state.capacities = parseCpmsSet(lines);
    log.info({ storage: memory, capacity: state.capacities[0] }, 'SMS storage selected');
    return;
  }
  state.storage = undefined;
  if (candidates.length > 0)
    log.warn({ tried: candidates }, 'no SMS storage could be selected; keeping the modem default');
}

/**
 * Direct delivery (+CMT) is only safe when the modem waits for our AT+CNMA: that is message service 1 (AT+CSMS=1,
 * 3GPP TS 27.005 3.2.1). In service 0 the modem acknowledges +CMT to the network itself, before the spool write, and
 * a crash then loses the SMS. When service 1 is refused, fall back to store mode (+CMTI), loudly.
 */
async function selectMessageService(ctx: InitContext): Promise<void> {
  const { state } = ctx;
  state.delivery = ctx.settings.delivery ?? 'store';
  if (state.delivery !== 'direct') return;
  const lines = await ctx.at.tryLines('AT+CSMS=1');
  const support = lines && /\+CSMS:\s*(\d)/.exec(lines.join(' '));
  if (support && support[1] === '1') return;
  state.delivery = 'store';
  ctx.log.error(
    { answer: lines },
    'direct delivery needs AT+CSMS=1 (the modem holds +CMT until AT+CNMA) and this modem refused it: using store mode (+CMTI, read, delete) instead',
  );
}

async function negotiateCnmi(ctx: InitContext, profile: ModemProfile): Promise<void> {
  const { at, log, state } = ctx;
  const delivery = state.delivery;
  const ranges = parseCnmiRanges((await at.tryLines('AT+CNMI=?')) ?? []);
  const negotiated = ranges ? chooseCnmi(ranges, delivery) : undefined;
  if (ranges && !negotiated) log.warn({ ranges }, 'AT+CNMI=? offers no usable mode/mt; trying fallbacks');
  const candidates = [
    ...(negotiated ? [negotiated] : []),
    ...profile.cnmiFallbacks.map((c) => adaptCnmiForDelivery(c, delivery)),
    ...genericCnmiFallbacks(delivery),
  ].filter((c, i, all) => all.indexOf(c) === i);
  for (const setting of candidates) {
    const lines = await at.tryLines(`AT+CNMI=${setting}`);
    if (lines === undefined) continue;
    state.cnmi = setting;
    log.info({ cnmi: setting, negotiated: setting === negotiated }, 'new-message indications enabled');
    return;
  }
  state.cnmi = undefined;
  log.error({ tried: candidates }, 'no AT+CNMI setting accepted: new SMS will only be found by polling');
}
