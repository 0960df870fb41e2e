/**
 * The modem's access to its AT channel: run a command, run one whose failure is tolerated, and tell a closed port
 * apart from a refused command. Every modem module (init, SIM, USSD, status) goes through it.
 * Invariants: a closed port always surfaces as PortError (PORT_CLOSED), also from tolerated commands; a tolerated
 * failure is logged at debug level with the command and its final result, never silently dropped.
 */
import type { AtChannel, AtResponse, AtRunOptions } from '../at/types.js';
import { AtCommandError, BridgeError, PortError } from '../errors.js';
import type { Logger } from '../log.js';
import type { StepAt } from './types.js';

export class ModemAt implements StepAt {
  readonly channel: AtChannel;
  private readonly name: string;
  private readonly log: Logger;

  constructor(channel: AtChannel, name: string, log: Logger) {
    this.channel = channel;
    this.name = name;
    this.log = log;
  }

  get isOpen(): boolean {
    return this.channel.isOpen;
  }

  /** channel.run, with a closed port reported as PortError (what profile steps see). */
  async run(command: string, options?: AtRunOptions): Promise<AtResponse> {
    try {
      return await this.channel.run(command, options);
    } catch (err) {
      this.rethrowIfGone(err);
      throw err;
    }
  }

  /** Runs a command whose failure is tolerated: logged, undefined returned. A closed port still throws. */
  async tryLines(command: string, timeoutMs?: number): Promise<readonly string[] | undefined> {
    try {
      return (await this.channel.run(command, timeoutMs === undefined ? undefined : { timeoutMs })).lines;
    } catch (err) {
      this.rethrowIfGone(err);
      this.log.debug(
        {
          command,
          final: err instanceof AtCommandError ? err.final : undefined,
          code: err instanceof BridgeError ? err.code : undefined,
        },
        'command failed (tolerated)',
      );
      return undefined;
    }
  }

  /** Throws PortError when the channel is closed (whatever `err` was); returns otherwise. */
  rethrowIfGone(err: unknown): void {
    if (this.channel.isOpen) return;
    if (err instanceof PortError) throw err;
    throw new PortError('PORT_CLOSED', `${this.name}: the modem port is closed`, { cause: err });
  }
}
