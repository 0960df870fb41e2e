/**
 * The daemon's answer to a control request (the ControlServer's handler): request -> action on one of the daemon's
 * modems, run on that modem's scheduler (src/modem/scheduler.ts) so it never talks to the modem beside the receiver.
 *
 * Contract
 * - A request names a modem by its config name; `modem` may be omitted when the daemon has exactly one. An unknown
 *   name is `unknown_modem` (with the names known) and runs nothing. A modem that is not connected is
 *   `modem_unavailable` with the scheduler's reason.
 * - Every modem command is queued at priority 'operator', one scheduler task per AT command line the operator asked
 *   for (`info` and `sms delete` are one task each; `sms send` one task per part), so an SMS arriving meanwhile
 *   waits for at most one of them (the scheduler runs receive work next). A request whose client disconnects
 *   while it is queued is dropped from the queue (its AbortSignal); one already running finishes its command.
 * - Raw AT lines go through at-guard.ts: a line that would break the daemon's state is `refused` (with the reasons)
 *   unless `force`; after a forced line (or one that changes the SIM or network state) the daemon re-initialises
 *   the modem (exclusive, so nothing interleaves with storage selection or CNMI).
 * - Errors of the modem layer are answered with their BridgeError code in `data.code` (and the hint), so the CLI
 *   prints exactly what it prints when it opened the port itself. Nothing thrown here can take the daemon down:
 *   the server answers anything unexpected with `internal`.
 * - Not wired yet: `ussd.*` and `balance` (their pieces are built elsewhere); they are answered `bad_request`.
 */
import type { AtChannel } from '../at/types.js';
import { AtCommandError, BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Modem } from '../modem/modem.js';
import { ModemUnavailableError, type AtScheduler, type TaskContext } from '../modem/scheduler.js';
import { deleteSlot, encodeForSend, listSlots, modemInfo, readSlot } from './actions.js';
import { checkAtLine } from './at-guard.js';
import type { AtOutcome } from './ops.js';
import { PROTOCOL_VERSION, type Request } from './protocol.js';
import { ControlError, type ControlConnection, type ControlHandler } from './server.js';

/** One of the daemon's configured modems, as the dispatcher sees it. */
export interface DispatchModem {
  readonly name: string;
  /** The serial port from the config (the CLI matches `--port P` against it). */
  readonly port: string;
  readonly scheduler: AtScheduler<{ readonly modem: Modem; readonly channel: AtChannel }>;
  /** The supervisor's state ('running', 'initialising', 'disconnected', ...). */
  state(): string;
}

export interface DispatcherOptions {
  modems: readonly DispatchModem[];
  version: string;
  logger: Logger;
  /** The daemon's status (`status` requests): what status.json holds. */
  status: () => unknown;
}

type Target = { readonly modem: Modem; readonly channel: AtChannel };

/** A modem-layer error as a wire error: the same message, hint and BridgeError code the direct path shows. */
export function toControlError(err: unknown): ControlError {
  if (err instanceof ControlError) return err;
  if (err instanceof ModemUnavailableError) return new ControlError('modem_unavailable', err.message, err.hint, { code: err.code });
  if (err instanceof AtCommandError) {
    const data = { code: err.code, command: err.command, final: err.final, lines: [...err.lines] };
    return new ControlError(err.code === 'AT_TIMEOUT' ? 'timeout' : 'modem_error', err.message, err.hint, data);
  }
  if (err instanceof BridgeError) {
    const wire = err.code === 'PDU_INVALID' ? 'bad_request' : err.code.startsWith('PORT_') ? 'modem_unavailable' : 'modem_error';
    return new ControlError(wire, err.message, err.hint, { code: err.code });
  }
  if (err instanceof Error && err.name === 'AbortError') return new ControlError('cancelled', err.message);
  throw err; // anything else is a bug: the server answers `internal` and logs it
}

export class Dispatcher {
  private readonly byName = new Map<string, DispatchModem>();
  private readonly log: Logger;

  constructor(private readonly o: DispatcherOptions) {
    for (const m of o.modems) this.byName.set(m.name, m);
    this.log = o.logger.child({ stage: 'control' });
  }

  /** The ControlServer's handler. */
  readonly handle: ControlHandler = async (req, conn, signal) => {
    try {
      return await this.dispatch(req, conn, signal);
    } catch (err) {
      throw toControlError(err);
    }
  };

  private modemOf(req: Request): DispatchModem {
    const names = [...this.byName.keys()];
    if (req.modem === undefined) {
      if (names.length === 1) return this.byName.get(names[0]!)!;
      throw new ControlError('unknown_modem', `this daemon runs ${names.length} modems: name one (${names.join(', ')})`, 'pass --modem NAME', { modems: names });
    }
    const m = this.byName.get(req.modem);
    if (!m) throw new ControlError('unknown_modem', `no modem named "${req.modem}" in the running daemon (it runs: ${names.join(', ')})`, 'names are the config\'s modems[].name', { modems: names });
    return m;
  }

  /** One operator task on the modem's scheduler. */
  private operator<R>(m: DispatchModem, label: string, signal: AbortSignal, fn: (ctx: TaskContext<Target>) => Promise<R>): Promise<R> {
    return m.scheduler.schedule({ priority: 'operator', label: `operator: ${label}`, signal }, fn);
  }

  private async dispatch(req: Request, conn: ControlConnection, signal: AbortSignal): Promise<unknown> {
    switch (req.op) {
      case 'hello':
        if (req.client !== undefined) conn.client = req.client;
        return {
          daemon: 'pulsa-bridge',
          version: this.o.version,
          protocol: PROTOCOL_VERSION,
          pid: process.pid,
          modems: this.o.modems.map((m) => ({ name: m.name, port: m.port, state: m.state() })),
        };
      case 'status':
        return this.o.status();
      case 'subscribe':
        if (req.modem !== undefined) this.modemOf(req); // an unknown name is an error, not a silent empty stream
        for (const e of req.events) conn.subscriptions.add(e);
        return { subscribed: [...conn.subscriptions] };
      case 'info': {
        const m = this.modemOf(req);
        return this.operator(m, 'info', signal, ({ target }) => modemInfo(target.modem));
      }
      case 'sms.list': {
        const m = this.modemOf(req);
        return this.operator(m, 'sms list', signal, ({ target }) => listSlots(target.modem, req.which ?? 'all'));
      }
      case 'sms.read': {
        const m = this.modemOf(req);
        return (await this.operator(m, `sms read ${req.index}`, signal, ({ target }) => readSlot(target.modem, req.index))) ?? null;
      }
      case 'sms.delete': {
        const m = this.modemOf(req);
        const r = await this.operator(m, `sms delete ${req.index}`, signal, ({ target }) => deleteSlot(target.modem, req.index));
        this.log.info({ modem: m.name, index: req.index, deleted: r.deleted, client: conn.client }, `operator: sms delete ${req.index} on ${m.name}: ${r.deleted ? 'deleted' : 'slot was empty'}`);
        return r;
      }
      case 'sms.send': {
        const m = this.modemOf(req);
        const pdus = encodeForSend(req.to, req.text);
        const references: number[] = [];
        for (const [i, part] of pdus.entries()) {
          // One task per part: an SMS arriving during a long send waits for one AT+CMGS, not all of them.
          const [ref] = await this.operator(m, `sms send part ${i + 1}/${pdus.length}`, signal, ({ target }) => target.modem.sendSms(req.to, [part]));
          references.push(ref ?? -1);
        }
        this.log.info({ modem: m.name, to: req.to, parts: pdus.length, client: conn.client }, `operator: SMS sent to ${req.to} on ${m.name}`);
        return { parts: pdus.length, references };
      }
      case 'at':
        return this.at(req, conn, signal);
      case 'ussd.open':
      case 'ussd.reply':
      case 'ussd.cancel':
      case 'balance':
        this.modemOf(req);
        throw new ControlError('bad_request', `${req.op} is not available through this daemon yet`, 'stop the daemon to use the command on the port directly');
    }
  }

  private async at(req: Extract<Request, { op: 'at' }>, conn: ControlConnection, signal: AbortSignal): Promise<AtOutcome> {
    const m = this.modemOf(req);
    const verdict = checkAtLine(req.command);
    if (verdict.notAt) throw new ControlError('bad_request', verdict.notAt);
    if (verdict.refused.length > 0 && !req.force) {
      throw new ControlError('refused', `refused through the running daemon: ${verdict.refused.join('; ')}`, 'add --force if you mean it (the daemon then re-checks its settings and re-initialises the modem)', {
        reasons: verdict.refused,
      });
    }
    const outcome = await this.operator(m, `AT ${req.command}`, signal, ({ target }) => runLine(target.channel, req));
    if (verdict.recheck) {
      this.log.warn({ modem: m.name, command: req.command, client: conn.client }, `operator: ${req.command} may have changed what the daemon relies on: re-initialising ${m.name}`);
      // Not tied to the client's signal: once the line ran, the modem must be put back whatever the client does.
      void m.scheduler
        .exclusive('re-init after an operator AT command', ({ target }) => target.modem.init())
        .catch((err: unknown) => this.log.error({ err, modem: m.name }, `re-initialising ${m.name} after an operator command failed: ${errorMessage(err)}`));
    }
    return outcome;
  }
}

/** One raw line on the channel, its answer as an AtOutcome (a modem error is an outcome, not a throw). */
async function runLine(channel: AtChannel, req: Extract<Request, { op: 'at' }>): Promise<AtOutcome> {
  const urcs: string[] = [];
  const onUrc = (u: { lines: string[] }) => urcs.push(...u.lines);
  channel.on('urc', onUrc);
  const options = req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {};
  try {
    const r = req.body !== undefined ? await channel.runWithPrompt(req.command, req.body, options) : await channel.run(req.command, options);
    return { command: req.command, lines: [...r.lines], final: r.final, ok: true, urcs };
  } catch (err) {
    if (err instanceof AtCommandError && err.final !== undefined) {
      return { command: req.command, lines: [...err.lines], final: err.final, ok: false, error: err.message, urcs };
    }
    throw err;
  } finally {
    channel.off('urc', onUrc);
  }
}
