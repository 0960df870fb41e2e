/**
 * The SIM step of init: read the SIM state, enter the configured PIN when asked, wait out a busy SIM.
 * A wrong PIN is tried once, ever: the attempt is recorded (RejectedPins, shared across restarts and reconnects) before
 * AT+CPIN is sent, and only READY clears it; when it cannot be recorded, or the record cannot be read, no PIN is sent.
 * With one try left (or none) no PIN is sent: the last try is the operator's. The PIN is never logged or put in an
 * error. Every SIM problem is a BridgeError SIM_NOT_READY with an actionable hint.
 */
import { AtCommandError, BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import { extractId, infoValue } from './parse.js';
import { attemptEntries, findAttempt, type PinAttempt, type PinEntries } from './pin-records.js';
import { parsePinTries } from './pin-tries.js';
import type { ModemProfile, StepAt } from './types.js';

/** Checks of AT+CPIN? (pollIntervalMs apart) while the SIM is busy or the PIN is being accepted. */
const UNLOCK_ATTEMPTS = 10;

/** How long AT+CPIN="..." may take (SIM800/EC25 document up to 5 s). */
const PIN_TIMEOUT_MS = 15_000;

/** The generic SIM-state step: AT+CPIN? with the channel's default timeout. */
export async function readSimStateGeneric(at: StepAt): Promise<readonly string[]> {
  return (await at.run('AT+CPIN?')).lines;
}

/**
 * PINs sent to a SIM that did not unlock it, by SIM key (src/state/pin-memory.ts keeps them in a file; PINs are only
 * ever stored hashed). `keys` is the SIM's keys, strongest first, `modem:<name>` last (pin-records.ts).
 */
export interface RejectedPins {
  /** The earlier attempt of `pin` on this SIM that did not unlock it, or undefined. Rejects when the memory cannot be
   *  read (the caller then sends no PIN). */
  attempt(keys: readonly string[], pin: string): Promise<PinAttempt | undefined>;
  /** `pin` is about to be sent: recorded as sent, not confirmed. Rejects when that could not be persisted (the caller
   *  then does not send it); it is remembered for the rest of the process either way. */
  sending(keys: readonly string[], pin: string): Promise<void>;
  /** `pin` was rejected, or not accepted, by the SIM. Even when this rejects (a write failed), the rejection is
   *  remembered for the rest of the process. */
  remember(keys: readonly string[], pin: string): Promise<void>;
  /** The SIM accepted a PIN: nothing is remembered under these keys any more. */
  forget(keys: readonly string[]): Promise<void>;
}

/** A memory for one process (tests, the simulator): nothing is written anywhere. */
export class ProcessRejectedPins implements RejectedPins {
  private readonly sims: PinEntries = {};
  async attempt(keys: readonly string[], pin: string): Promise<PinAttempt | undefined> {
    return findAttempt(this.sims, keys, pin);
  }
  async sending(keys: readonly string[], pin: string): Promise<void> {
    Object.assign(this.sims, attemptEntries(keys, pin, 'sent', new Date().toISOString()));
  }
  async remember(keys: readonly string[], pin: string): Promise<void> {
    Object.assign(this.sims, attemptEntries(keys, pin, 'rejected', new Date().toISOString()));
  }
  async forget(keys: readonly string[]): Promise<void> {
    for (const key of keys) delete this.sims[key];
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
          throw this.simError(
            'no SIM card: AT+CPIN? answered +CME ERROR: 10 (SIM not inserted)',
            'insert or reseat the SIM with the modem unplugged',
          );
        case 11:
          return this.remember('SIM PIN');
        case 12:
          return this.remember('SIM PUK');
        case 13:
        case 15:
          throw this.simError(
            `SIM failure: AT+CPIN? answered ${describeFinal(err.final)}`,
            'reseat or replace the SIM',
          );
        case 14: // SIM busy
        case 515: // "please wait, init or command processing in progress": right after power-up (python-gsmmodem)
          return this.remember('BUSY');
        default:
          throw this.simError(`SIM state unknown: AT+CPIN? answered ${describeFinal(err.final)}`);
      }
    }
    const state = infoValue(lines, '+CPIN');
    if (state === undefined)
      throw this.simError(`SIM state unknown: AT+CPIN? answered ${JSON.stringify(lines.join(' | '))}`);
    return this.remember(state.replace(/"/g, '').trim().toUpperCase());
  }

  private remember(state: string): string {
    this.state = state;
    return state;
  }

  /** Resolves once the SIM is READY; enters the PIN when it asks for one (see the header for when it does not). */
  async unlock(profile: ModemProfile): Promise<void> {
    let sent: { keys: readonly string[]; pin: string } | undefined;
    try {
      for (let attempt = 1; attempt <= UNLOCK_ATTEMPTS; attempt++) {
        const state = await this.query(profile);
        if (state === 'READY') {
          if (sent) {
            const keys = sent.keys;
            sent = undefined;
            await this.forgetRejection(keys);
          }
          return;
        }
        if (state === 'SIM PIN') {
          const pin = this.o.pin;
          if (pin === undefined || pin === '') {
            throw this.simError('SIM needs a PIN: set modems[].pin', 'or remove the PIN lock with a phone');
          }
          if (!sent) {
            const keys = await this.simKeys(profile);
            await this.checkMemory(keys, pin);
            const tries = await this.readPinTries(profile);
            if (tries !== undefined && tries <= 1) {
              throw this.simError(
                `the SIM (${keys[0]}) has ${tries} PIN ${tries === 1 ? 'try' : 'tries'} left: the configured PIN is not sent (the last try is yours)`,
                tries === 1
                  ? 'check modems[].pin, then enter it once in a phone (or `pulsa-bridge at --port P AT+CPIN=...`); a wrong one locks the SIM'
                  : 'unlock the SIM in a phone with the PUK code from the SIM card holder',
              );
            }
            await this.recordSending(keys, pin);
            sent = { keys, pin };
            await this.enterPin(pin, keys[0]!, profile);
          }
        } else if (state === 'SIM PUK' || state === 'SIM PUK2') {
          throw this.simError(
            'SIM is PUK-locked (too many wrong PINs)',
            'unlock it in a phone with the PUK code from the SIM card holder',
          );
        } else if (state !== 'BUSY') {
          throw this.simError(`SIM not ready: +CPIN: ${state}`);
        }
        await this.o.delay(this.o.pollIntervalMs);
      }
      throw this.simError(
        `SIM still not ready after ${UNLOCK_ATTEMPTS} checks (last state: ${this.state ?? 'unknown'})${sent ? '; the PIN sent is treated as rejected and not sent again until modems[].pin changes' : ''}`,
      );
    } finally {
      // Sent and the SIM never reached READY (an ERROR, a timeout, still `SIM PIN`, the port gone): not accepted.
      if (sent) await this.rememberRejection(sent.keys, sent.pin);
    }
  }

  /** Throws SIM_NOT_READY when this PIN did not unlock this SIM before, or when the memory cannot tell. */
  private async checkMemory(keys: readonly string[], pin: string): Promise<void> {
    let earlier: PinAttempt | undefined;
    try {
      earlier = await this.rejected.attempt(keys, pin);
    } catch (err) {
      this.o.log.error({ err }, 'the memory of rejected PINs cannot be read: no PIN is sent');
      throw this.simError(
        `the memory of rejected PINs cannot be read (${errorMessage(err)}): the configured PIN is not sent`,
        'check that file (its owner, mode 0600, its JSON); remove it only if you know the configured PIN was never rejected by this SIM, then restart',
      );
    }
    if (earlier === undefined) return;
    const hint =
      'set the right modems[].pin and restart the bridge (a third wrong PIN locks the SIM: it then needs its PUK)';
    if (earlier.outcome === 'rejected') {
      throw this.simError(
        `the SIM (${earlier.key}) rejected the configured PIN at ${earlier.at}; it is not sent again until modems[].pin changes`,
        hint,
      );
    }
    throw this.simError(
      `the configured PIN was sent to the SIM (${earlier.key}) at ${earlier.at} and never confirmed accepted: it is treated as rejected and not sent again until modems[].pin changes`,
      `${hint}; if the PIN is right, enter it once by hand (\`pulsa-bridge at --port P AT+CPIN=...\`)`,
    );
  }

  /** Persists "PIN sent, not confirmed" before it is sent; throws SIM_NOT_READY (nothing sent) when it cannot. */
  private async recordSending(keys: readonly string[], pin: string): Promise<void> {
    try {
      await this.rejected.sending(keys, pin);
    } catch (err) {
      this.o.log.error({ err }, `could not record the PIN attempt (${errorMessage(err)}): the PIN is not sent`);
      throw this.simError(
        `could not record the PIN attempt before sending it (${errorMessage(err)}): the configured PIN is not sent`,
        'make the state directory (config stateDir, default spool.dir) writable for the bridge, then restart',
      );
    }
  }

  private async rememberRejection(keys: readonly string[], pin: string): Promise<void> {
    try {
      await this.rejected.remember(keys, pin);
    } catch (err) {
      // The memory keeps it for this process (see RejectedPins); the "sent" entry written before sending still
      // stands in the file unless that write failed too.
      this.o.log.error(
        { err },
        `could not persist the rejected PIN (${errorMessage(err)}): it is not sent again by this process`,
      );
    }
  }

  /** The SIM's keys, strongest first, `modem:<name>` last: ICCID (readable before the PIN on most modems), else IMSI. */
  private async simKeys(profile: ModemProfile): Promise<string[]> {
    const modem = `modem:${this.o.name}`;
    const iccid = await readIccid(this.o.at, profile);
    if (iccid) return [`iccid:${iccid}`, modem];
    const imsi = extractId((await this.o.at.tryLines('AT+CIMI')) ?? [], /\d{6,15}/);
    if (imsi) return [`imsi:${imsi}`, modem];
    return [modem];
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

  private async forgetRejection(keys: readonly string[]): Promise<void> {
    try {
      await this.rejected.forget(keys);
    } catch (err) {
      // The PIN was accepted: a stale entry only matters if this same PIN is configured again and was the rejected one.
      this.o.log.warn({ err }, 'could not clear the memory of rejected PINs');
    }
  }

  /** Sends the PIN (the caller recorded the attempt and records the rejection); throws SIM_NOT_READY when the modem
   *  does not accept it. */
  private async enterPin(pin: string, key: string, profile: ModemProfile): Promise<void> {
    this.o.log.info('entering the configured SIM PIN');
    try {
      // SIM800/EC25 allow up to 5 s for the SIM to check a PIN; an early timeout would lose a late +CME ERROR: 16.
      await this.o.at.channel.run(`AT+CPIN="${pin}"`, { timeoutMs: PIN_TIMEOUT_MS });
    } catch (err) {
      this.o.at.rethrowIfGone(err);
      // No cause attached and no err.message used: the failed command text contains the PIN.
      const final = err instanceof AtCommandError ? err.final : undefined;
      const code = err instanceof AtCommandError ? err.errorCode : undefined;
      const notAgain = 'it is not sent again until modems[].pin changes';
      const hint =
        'set the right modems[].pin and restart the bridge (a third wrong PIN locks the SIM: it then needs its PUK)';
      if (code === 16) {
        const tries = await this.readPinTries(profile);
        throw this.simError(
          `the SIM (${key}) rejected the configured PIN (+CME ERROR: 16 incorrect password)${tries !== undefined ? `; ${tries} ${tries === 1 ? 'try' : 'tries'} left` : ''}; ${notAgain}`,
          hint,
        );
      }
      if (code === 12)
        throw this.simError('SIM is PUK-locked (too many wrong PINs)', 'unlock it in a phone with the PUK code');
      const what =
        err instanceof AtCommandError && err.code === 'AT_TIMEOUT'
          ? `no answer within ${PIN_TIMEOUT_MS / 1000} s`
          : describeFinal(final);
      throw this.simError(`entering the PIN failed (${what}): the SIM did not accept it; ${notAgain}`, hint);
    }
  }
}
