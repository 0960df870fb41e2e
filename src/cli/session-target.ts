/**
 * Stand-in for src/cli/target.ts (the daemon-or-port resolver built in parallel): the `at` and `ussd` commands'
 * OpsTarget over session.ts, opening the port (or --simulate) for the one command. It implements exactly the
 * ModemOps methods those commands use, with the same pieces the daemon uses (runRawAt, UssdSessions), so their
 * output is the one the daemon path gives. When target.ts is merged, cli.ts passes `{ options: targetOptions,
 * withOps: withModemOps }` instead and this file goes.
 */
import { Command, Option } from 'commander';
import { runRawAt } from '../at/raw.js';
import type { ModemOps } from '../control/ops.js';
import type { EventMessage } from '../control/protocol.js';
import { UssdSessions } from '../control/ussd-sessions.js';
import { createLogger, silentLogger, type Logger } from '../log.js';
import { PROFILE_SETTINGS } from '../modem/profiles/index.js';
import type { Io } from './io.js';
import type { OpsTarget, TargetCliOptionsBase } from './ops-target.js';
import { openSession, type Session } from './session.js';
import { wholeNumber } from './usage.js';

export type SessionOps = Pick<ModemOps, 'at' | 'onEvent' | 'ussdOpen' | 'ussdReply' | 'ussdCancel'>;

interface SessionCliOptions extends TargetCliOptionsBase {
  port?: string;
  baud: number;
  simulate?: boolean;
  profile?: string;
  pin?: string;
}

function loggerFor(opts: { verbose?: boolean }): Logger {
  return opts.verbose ? createLogger({ level: 'debug', pretty: false, destination: process.stderr }) : silentLogger();
}

const OWNER = { id: 'cli', label: 'this command' };

/** The ops of one open session: `at` without init, USSD after init (the profile decides how USSD is sent). */
export function sessionOps(s: Session, logger: Logger): SessionOps & { close(): Promise<void> } {
  let initialised: Promise<unknown> | undefined;
  const ready = (): Promise<unknown> => (initialised ??= s.modem.init());
  const ussd = new UssdSessions({ modem: 'cli', logger, run: async (_label, fn) => fn(s.modem) });
  return {
    at: (command, o = {}) =>
      runRawAt(s.channel, command, {
        ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
        ...(o.body !== undefined ? { body: o.body } : {}),
        ...(o.cancelPrompt ? { cancelPrompt: true } : {}),
      }),
    onEvent: (listener: (e: EventMessage) => void) => {
      const onUrc = (u: { name: string; lines: string[]; data: Record<string, unknown> }): void =>
        listener({ v: 1, event: 'urc', data: { name: u.name, lines: u.lines, data: u.data } });
      s.channel.on('urc', onUrc);
      return Promise.resolve(() => void s.channel.off('urc', onUrc));
    },
    ussdOpen: async (code, o = {}) => {
      await ready();
      return ussd.open(OWNER, code, o);
    },
    ussdReply: (text, o = {}) => ussd.reply(OWNER, text, o),
    ussdCancel: () => ussd.cancel(OWNER),
    close: async () => {
      await ussd.cancel(OWNER);
    },
  };
}

export const sessionTarget: OpsTarget<SessionOps> = {
  options: (cmd: Command) =>
    cmd
      .option('-p, --port <path>', 'serial port, e.g. /dev/serial/by-id/usb-...-if02-port0 (see `pulsa-bridge ports`)')
      .option('-b, --baud <rate>', 'baud rate', wholeNumber('a baud rate such as 115200 or 9600', 1), 115200)
      .option('--simulate', 'use the built-in virtual modem instead of hardware')
      .addOption(new Option('--profile <id>', 'modem profile (default: detected)').choices(PROFILE_SETTINGS))
      .option('--pin <pin>', 'SIM PIN, if the SIM asks for one (or set PULSA_BRIDGE_PIN)')
      .option('--timeout <ms>', 'per-command timeout in ms', wholeNumber('a timeout in ms (a whole number >= 1)', 1), 10_000)
      .option('-v, --verbose', 'log the AT traffic to stderr'),
  withOps: async <T>(io: Io, base: TargetCliOptionsBase, fn: (ops: SessionOps) => Promise<T>): Promise<T> => {
    const opts = base as SessionCliOptions;
    const logger = loggerFor(opts);
    const pin = opts.pin ?? process.env.PULSA_BRIDGE_PIN;
    const session = await openSession({
      ...(opts.port ? { port: opts.port } : {}),
      baud: opts.baud,
      simulate: opts.simulate === true,
      ...(opts.profile ? { profile: opts.profile } : {}),
      ...(pin ? { pin } : {}),
      timeoutMs: opts.timeout,
      logger,
      ...(io.virtualModem ? { virtualModem: io.virtualModem } : {}),
    });
    const ops = sessionOps(session, logger);
    try {
      return await fn(ops);
    } finally {
      await ops.close().catch((err: unknown) => logger.debug({ err }, 'cancelling the USSD session at exit failed (the port closes anyway)'));
      await session.close();
    }
  },
};
