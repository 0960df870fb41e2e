/**
 * Test helper: the `at` and `ussd` commands on an OpsTarget over src/cli/session.ts, opening --simulate (or a port)
 * for the one command, with the pieces the control plane is to use on both paths (runRawAt, UssdBroker), so the
 * commands are tried on them before DirectOps / the dispatcher are wired to them. `runSessionCli` runs argv like
 * main() does, with these two commands only.
 */
import { Command, Option } from 'commander';
import { atCommand } from '../../src/cli/at.js';
import { allCommands, runCli } from '../../src/cli/lifecycle.js';
import { ussdCommand } from '../../src/cli/ussd.js';
import { runRawAt } from '../../src/at/raw.js';
import type { ModemOps } from '../../src/ops/modem-ops.js';
import type { EventMessage } from '../../src/control/protocol.js';
import { UssdBroker } from '../../src/ops/ussd-broker.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import { PROFILE_SETTINGS } from '../../src/modem/profiles/index.js';
import type { Io } from '../../src/cli/io.js';
import type { OpsTarget, TargetCliOptionsBase } from '../../src/cli/ops-target.js';
import { openSession, type Session } from '../../src/cli/session.js';
import { wholeNumber } from '../../src/cli/usage.js';
import { SIMULATE_PORT } from '../../src/serial/port-kind.js';
import { withSimulateDevice, type TestIo } from '../support/cli.js';

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
  const ussd = new UssdBroker({ modem: 'cli', logger, run: async (_label, fn) => fn(s.modem) });
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
      .option(
        '--timeout <ms>',
        'per-command timeout in ms',
        wholeNumber('a timeout in ms (a whole number >= 1)', 1),
        10_000,
      )
      .option('-v, --verbose', 'log the AT traffic to stderr'),
  withOps: async <T>(io: Io, base: TargetCliOptionsBase, fn: (ops: SessionOps) => Promise<T>): Promise<T> => {
    const opts = base as SessionCliOptions;
    const logger = loggerFor(opts);
    const pin = opts.pin ?? process.env.PULSA_BRIDGE_PIN;
    const session = await openSession({
      ...(opts.port || opts.simulate ? { port: opts.port ?? SIMULATE_PORT } : {}),
      baud: opts.baud,
      ...(opts.profile ? { profile: opts.profile } : {}),
      ...(pin ? { pin } : {}),
      timeoutMs: opts.timeout,
      logger,
    });
    const ops = sessionOps(session, logger);
    try {
      return await fn(ops);
    } finally {
      await ops
        .close()
        .catch((err: unknown) =>
          logger.debug({ err }, 'cancelling the USSD session at exit failed (the port closes anyway)'),
        );
      await session.close();
    }
  },
};

/** Runs `pulsa-bridge <args>` with the `at` and `ussd` commands on sessionTarget; sets process.exitCode like main(). */
export async function runSessionCli(args: string[], io: TestIo): Promise<void> {
  await withSimulateDevice(io, () => runSession(args, io));
}

async function runSession(args: string[], io: Io): Promise<void> {
  const program = new Command().name('pulsa-bridge');
  program.addCommand(atCommand(io, sessionTarget));
  program.addCommand(ussdCommand(io, sessionTarget));
  for (const c of allCommands(program))
    c.configureOutput({ writeOut: io.out, writeErr: io.err }).showHelpAfterError('(add --help for usage)');
  await runCli(program, ['node', 'pulsa-bridge', ...args], io);
}
