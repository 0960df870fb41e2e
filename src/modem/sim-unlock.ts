/**
 * The SIM step of init: read the SIM state (AT+CPIN?), enter the configured PIN when asked, wait out a busy SIM.
 * Contract and invariants:
 * - A wrong PIN is tried once, ever (issue 11, item 1): a PIN the SIM rejected (+CME ERROR: 16) is remembered per SIM
 *   in `RejectedPins` (the daemon's is a file in the state directory, so restarts and reconnects share it) and not
 *   sent again until the configured PIN changes. The SIM key is its ICCID (readable before the PIN on most modems),
 *   else its IMSI, else `modem:<name>`.
 * - The tries left are read where the modem tells them (the profile's pinTriesCommands) before a PIN is sent; with
 *   one try left (or none) no PIN is sent: the last try is the operator's, in a phone.
 * - The PIN is sent at most once per unlock() and never logged or put in an error (the failed command text holds it).
 * - Every SIM problem is a BridgeError SIM_NOT_READY with an actionable message and hint (a state, not a crash).
 * - Reading the state is a profile step (readSimState); the generic one runs AT+CPIN? and the errors it throws are
 *   classified here, whatever step produced them.
 */
import { AtCommandError, BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import { extractId, infoValue } from './parse.js';
import { parsePinTries } from './pin-tries.js';
import type { ModemProfile, StepAt } from './types.js';

/** Checks of AT+CPIN? (pollIntervalMs apart) while the SIM is busy or the PIN is being accepted. */
const UNLOCK_ATTEMPTS = 10;

/** The generic SIM-state step: AT+CPIN? with the channel's default timeout. */
export async function readSimStateGeneric(at: StepAt): Promise<readonly string[]> {
  return (await at.run('AT+CPIN?')).lines;
}

/** Rejected PINs by SIM key (src/state/pin-memory.ts keeps them in a file; PINs are only ever stored hashed). */
export interface RejectedPins {
  /** When `pin` was rejected for the SIM `key`, undefined when it was not (or a different PIN was). */
  rejectedAt(key: string, pin: string): Promise<string | undefined>;
  /** `pin` was rejected for the SIM `key` (replaces an earlier entry). Even when this rejects (a write failed), the
   *  rejection is remembered for the rest of the process. */
  remember(key: string, pin: string): Promise<void>;
  /** The SIM `key` accepted a PIN: nothing is remembered for it any more. */
  forget(key: string): Promise<void>;
}

/** A memory for one process (the CLI, tests): nothing is written anywhere. */
export class ProcessRejectedPins implements RejectedPins {
  private readonly sims = new Map<string, { pin: string; at: string }>();
  async rejectedAt(key: string, pin: string): Promise<string | undefined> {
    const e = this.sims.get(key);
    return e && e.pin === pin ? e.at : undefined;
  }
  async remember(key: string, pin: string): Promise<void> {
    this.sims.set(key, { pin, at: new Date().toISOString() });
  }
  async forget(key: string): Promise<void> {
    this.sims.delete(key);
  }
}

/** The SIM's ICCID from the profile's ICCID commands (first answer wins), upper case; undefined when none answers. */
export async function readIccid(at: ModemAt, profile: ModemProfile): Promise<string | undefined> {
  for (const command of profile.iccidCommands) {
    const lines = await at.tryLines(command);
    const iccid = lines && extractId(lines, /\d{18,20}F?/i);
    if (iccid) return iccid.toUpperCase();
  }
  return undefined;
}

export interface SimUnlockOptions {
  at: ModemAt;
  /** Modem name, first word of every message. */
  name: string;
  log: Logger;
  pin: string | undefined;
  /** Where rejected PINs are remembered; default: for this SimUnlock's process only. */
  rejectedPins?: RejectedPins;
  pollIntervalMs: number;
  delay: (ms: number) => Promise<void>;
}

export class SimUnlock {
  /** The last state AT+CPIN? reported ('READY', 'SIM PIN', ...). */
  state: string | undefined;
  /** PIN1 tries left as the modem last told them (undefined: not asked, or the modem does not say). */
  pinTriesLeft: number | undefined;
  private readonly o: SimUnlockOptions;
  private readonly rejected: RejectedPins;

  constructor(options: SimUnlockOptions) {
    this.o = options;
    this.rejected = options.rejectedPins ?? new ProcessRejectedPins();
  }

  private simError(message: string, hint?: string): BridgeError {
    return new BridgeError('SIM_NOT_READY', `${this.o.name}: ${message}`, hint === undefined ? {} : { hint });
  }

  /** AT+CPIN? -> 'READY' | 'SIM PIN' | 'SIM PUK' | 'BUSY' | other state text. Throws SIM_NOT_READY for a missing/failed SIM. */
  async query(profile: ModemProfile): Promise<string> {
    let lines: readonly string[];
    try {
      lines = await (profile.steps?.readSimState ?? readSimStateGeneric)(this.o.at);
    } catch (err) {
      this.o.at.rethrowIfGone(err);
      if (!(err instanceof AtCommandError)) throw err;
      switch (err.errorCode) {
        case 10:
          throw this.simError('no SIM card: AT+CPIN? answered +CME ERROR: 10 (SIM not inserted)', 'insert or reseat the SIM with the modem unplugged');
        case 11:
          return this.remember('SIM PIN');
        case 12:
          return this.remember('SIM PUK');
        case 13:
        case 15:
          throw this.simError(`SIM failure: AT+CPIN? answered ${describeFinal(err.final)}`, 'reseat or replace the SIM');
        case 14:
          return this.remember('BUSY');
        default:
          throw this.simError(`SIM state unknown: AT+CPIN? answered ${describeFinal(err.final)}`);
      }
    }
    const state = infoValue(lines, '+CPIN');
    if (state === undefined) throw this.simError(`SIM state unknown: AT+CPIN? answered ${JSON.stringify(lines.join(' | '))}`);
    return this.remember(state.replace(/"/g, '').trim().toUpperCase());
  }

  private remember(state: string): string {
    this.state = state;
    return state;
  }

  /** Resolves once the SIM is READY; enters the PIN when it asks for one (see the header for when it does not). */
  async unlock(profile: ModemProfile): Promise<void> {
    let sent: { key: string } | undefined;
    for (let attempt = 1; attempt <= UNLOCK_ATTEMPTS; attempt++) {
      const state = await this.query(profile);
      if (state === 'READY') {
        if (sent) await this.forgetRejection(sent.key);
        return;
      }
      if (state === 'SIM PIN') {
        const pin = this.o.pin;
        if (pin === undefined || pin === '') {
          throw this.simError('SIM needs a PIN: set modems[].pin', 'or remove the PIN lock with a phone');
        }
        if (!sent) {
          const key = await this.simKey(profile);
          const rejectedAt = await this.rejected.rejectedAt(key, pin);
          if (rejectedAt !== undefined) {
            throw this.simError(
              `the SIM (${key}) rejected the configured PIN at ${rejectedAt}; it is not sent again until modems[].pin changes`,
              'set the right modems[].pin and restart the bridge (a third wrong PIN locks the SIM: it then needs its PUK)',
            );
          }
          const tries = await this.readPinTries(profile);
          if (tries !== undefined && tries <= 1) {
            throw this.simError(
              `the SIM (${key}) has ${tries} PIN ${tries === 1 ? 'try' : 'tries'} left: the configured PIN is not sent (the last try is yours)`,
              tries === 1
                ? 'check modems[].pin, then enter it once in a phone (or `pulsa-bridge at --port P AT+CPIN=...`); a wrong one locks the SIM'
                : 'unlock the SIM in a phone with the PUK code from the SIM card holder',
            );
          }
          await this.enterPin(pin, key, profile);
          sent = { key };
        }
      } else if (state === 'SIM PUK' || state === 'SIM PUK2') {
        throw this.simError('SIM is PUK-locked (too many wrong PINs)', 'unlock it in a phone with the PUK code from the SIM card holder');
      } else if (state !== 'BUSY') {
        throw this.simError(`SIM not ready: +CPIN: ${state}`);
      }
      await this.o.delay(this.o.pollIntervalMs);
    }
    throw this.simError(`SIM still not ready after ${UNLOCK_ATTEMPTS} checks (last state: ${this.state ?? 'unknown'})`);
  }

  /** ICCID (readable before the PIN on most modems), else IMSI, else the modem's config name. */
  private async simKey(profile: ModemProfile): Promise<string> {
    const iccid = await readIccid(this.o.at, profile);
    if (iccid) return `iccid:${iccid}`;
    const imsi = extractId((await this.o.at.tryLines('AT+CIMI')) ?? [], /\d{6,15}/);
    if (imsi) return `imsi:${imsi}`;
    return `modem:${this.o.name}`;
  }

  /** The PIN tries left, from the first of the profile's commands that tells them; undefined when none does. */
  private async readPinTries(profile: ModemProfile): Promise<number | undefined> {
    for (const command of profile.pinTriesCommands) {
      const tries = parsePinTries((await this.o.at.tryLines(command)) ?? []);
      if (tries !== undefined) {
        this.pinTriesLeft = tries;
        this.o.log.info({ pinTriesLeft: tries, command }, `SIM PIN tries left: ${tries}`);
        return tries;
      }
    }
    this.o.log.info('the modem does not tell the PIN tries left; relying on the memory of rejected PINs');
    return undefined;
  }

  private async forgetRejection(key: string): Promise<void> {
    try {
      await this.rejected.forget(key);
    } catch (err) {
      // The PIN was accepted: a stale entry only matters if this same PIN is configured again and was the rejected one.
      this.o.log.warn({ err }, 'could not clear the memory of rejected PINs');
    }
  }

  private async enterPin(pin: string, key: string, profile: ModemProfile): Promise<void> {
    this.o.log.info('entering the configured SIM PIN');
    try {
      await this.o.at.channel.run(`AT+CPIN="${pin}"`);
    } catch (err) {
      this.o.at.rethrowIfGone(err);
      // No cause attached and no err.message used: the failed command text contains the PIN.
      const final = err instanceof AtCommandError ? err.final : undefined;
      const code = err instanceof AtCommandError ? err.errorCode : undefined;
      if (code === 16) {
        try {
          await this.rejected.remember(key, pin);
        } catch (memErr) {
          // The memory keeps it for this process (see RejectedPins implementations); only the restart is unprotected.
          this.o.log.error({ err: memErr }, `could not persist the rejected PIN (${errorMessage(memErr)}): it is remembered until the bridge restarts only`);
        }
        const tries = await this.readPinTries(profile);
        throw this.simError(
          `the SIM (${key}) rejected the configured PIN (+CME ERROR: 16 incorrect password)${tries !== undefined ? `; ${tries} ${tries === 1 ? 'try' : 'tries'} left` : ''}; it is not sent again until modems[].pin changes`,
          'set the right modems[].pin and restart the bridge (a third wrong PIN locks the SIM: it then needs its PUK)',
        );
      }
      if (code === 12) throw this.simError('SIM is PUK-locked (too many wrong PINs)', 'unlock it in a phone with the PUK code');
      throw this.simError(`entering the PIN failed: ${describeFinal(final)}`);
    }
  }
}
