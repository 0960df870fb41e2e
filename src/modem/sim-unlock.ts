/**
 * The SIM step of init: read the SIM state (AT+CPIN?), enter the configured PIN when asked, wait out a busy SIM.
 * Contract and invariants:
 * - The PIN is sent at most once per unlock() and never logged or put in an error (the failed command text holds it);
 *   a rejected PIN (+CME ERROR: 16) is never sent again by this SimUnlock (a third wrong PIN locks the SIM).
 * - Every SIM problem is a BridgeError SIM_NOT_READY with an actionable message and hint (a state, not a crash).
 * - Reading the state is a profile step (readSimState); the generic one runs AT+CPIN? and the errors it throws are
 *   classified here, whatever step produced them.
 */
import { AtCommandError, BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import { infoValue } from './parse.js';
import type { ModemProfile, StepAt } from './types.js';

/** Checks of AT+CPIN? (pollIntervalMs apart) while the SIM is busy or the PIN is being accepted. */
const UNLOCK_ATTEMPTS = 10;

/** The generic SIM-state step: AT+CPIN? with the channel's default timeout. */
export async function readSimStateGeneric(at: StepAt): Promise<readonly string[]> {
  return (await at.run('AT+CPIN?')).lines;
}

export interface SimUnlockOptions {
  at: ModemAt;
  /** Modem name, first word of every message. */
  name: string;
  log: Logger;
  pin: string | undefined;
  pollIntervalMs: number;
  delay: (ms: number) => Promise<void>;
}

export class SimUnlock {
  /** The last state AT+CPIN? reported ('READY', 'SIM PIN', ...). */
  state: string | undefined;
  private pinRejected = false;
  private readonly o: SimUnlockOptions;

  constructor(options: SimUnlockOptions) {
    this.o = options;
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

  /** Resolves once the SIM is READY; enters the PIN when it asks for one. */
  async unlock(profile: ModemProfile): Promise<void> {
    if (this.pinRejected) {
      throw this.simError('the SIM rejected the configured PIN earlier; not retried', 'fix modems[].pin and restart the bridge (a third wrong PIN locks the SIM)');
    }
    let pinSent = false;
    for (let attempt = 1; attempt <= UNLOCK_ATTEMPTS; attempt++) {
      const state = await this.query(profile);
      if (state === 'READY') return;
      if (state === 'SIM PIN') {
        if (this.o.pin === undefined || this.o.pin === '') {
          throw this.simError('SIM needs a PIN: set modems[].pin', 'or remove the PIN lock with a phone');
        }
        if (!pinSent) {
          await this.enterPin(this.o.pin);
          pinSent = true;
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

  private async enterPin(pin: string): Promise<void> {
    this.o.log.info('entering the configured SIM PIN');
    try {
      await this.o.at.channel.run(`AT+CPIN="${pin}"`);
    } catch (err) {
      this.o.at.rethrowIfGone(err);
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
}
