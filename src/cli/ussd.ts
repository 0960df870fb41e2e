/**
 * `pulsa-bridge ussd CODE`: a USSD session through the daemon or on the port. Each reply is printed as it arrives
 * (status label, decoded text, or raw with its DCS); menus are answered with `--reply`, or interactively on a terminal.
 * A menu still open at exit is always cancelled (AT+CUSD=2): left open, the next code dialled would answer it.
 * Exit 1 for status 4 (not supported), 5 (timed out) and a release notice without reply; extra words are a usage error.
 */
import { UsageError } from './usage-error.js';
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import type { ModemOps, UssdOutcome } from '../ops/modem-ops.js';
import { ussdStatusLabel } from '../modem/ussd-status.js';
import { printJson, type Io } from './io.js';
import { CommandFailed } from './lifecycle.js';
import type { OpsTarget, TargetCliOptionsBase } from './ops-target.js';
import { targetOptions, withModemOps } from './target.js';
import { safeText } from '../terminal-text.js';
import { describeCbsDcs } from '../sms/dcs.js';

export type UssdOps = Pick<ModemOps, 'ussdOpen' | 'ussdReply' | 'ussdCancel'>;

interface UssdCliOptions extends TargetCliOptionsBase {
  reply: string[];
  cancel?: boolean;
  interactive?: boolean;
}

/** How one reply is shown (text mode). */
export function formatUssd(r: UssdOutcome): string {
  const head = `${r.releaseNotice !== undefined ? `(release notice first: ${r.releaseNotice})\n` : ''}[status ${r.status}: ${ussdStatusLabel(r.status)}${r.noReply ? ', no reply' : ''}]`;
  if (r.undecoded) {
    const hex = r.dcs === undefined ? '' : r.dcs.toString(16).padStart(2, '0');
    const dcs = r.dcs === undefined ? 'no dcs' : `dcs ${r.dcs} (0x${hex}: ${describeCbsDcs(r.dcs)})`;
    return `${head} undecoded, ${dcs}: shown as it came\n${safeText(r.text, { multiline: true })}\n`;
  }
  return `${head}\n${safeText(r.text, { multiline: true })}\n`;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The commands this module adds to the program (cli.ts): `ussd` on the running daemon's modem, else on the port. */
export function commands(io: Io): Command[] {
  return [ussdCommand(io, { options: targetOptions, withOps: withModemOps })];
}

export function ussdCommand(io: Io, target: OpsTarget<UssdOps>): Command {
  const cmd = target
    .options(new Command('ussd'))
    .description(summaryOf('ussd'))
    .argument('<code>', 'USSD code, e.g. *888# (quote it in the shell)')
    .option(
      '-r, --reply <text>',
      'an answer to the next menu (status 1); repeat for several: --reply 1 --reply 2',
      collect,
      [],
    )
    .option('--no-interactive', 'never ask for menu answers, even on a terminal')
    .option('--cancel', 'cancel the session after the last reply (always done when a menu is still open)')
    .option('--json', 'print JSON (every reply, in order)');
  return cmd.action(async (code: string, opts: UssdCliOptions) => {
    // Checked before any port opens: an empty or malformed code is the operator's typo, not the network's answer.
    if (!/^[*#]?[0-9*#+]*[0-9][0-9*#+]*#?$/.test(code.trim())) {
      throw new UsageError(code.trim() === '' ? 'empty USSD code' : `${JSON.stringify(code)} is not a USSD code`, {
        hint: 'digits with * and #, e.g. "*888#" (quoted in the shell)',
      });
    }
    const input = io.input ?? process.stdin;
    const interactive =
      opts.reply.length === 0 &&
      opts.interactive !== false &&
      !opts.json &&
      (input as { isTTY?: boolean }).isTTY === true;
    // The session timeout is the daemon's / modem's (30 s) unless --timeout was given.
    const timing = cmd.getOptionValueSource('timeout') === 'cli' ? { timeoutMs: opts.timeout } : {};
    await target.withOps(io, opts, async (ops) => {
      const replies: UssdOutcome[] = [];
      const show = (r: UssdOutcome): void => {
        replies.push(r);
        if (!opts.json) io.out(formatUssd(r));
      };
      let r: UssdOutcome | undefined;
      try {
        r = await ops.ussdOpen(code, timing);
        show(r);
        const answers = [...opts.reply];
        while (r.status === 1) {
          const answer = answers.length > 0 ? answers.shift() : interactive ? await ask(io, input) : undefined;
          if (answer === undefined || answer === '') break;
          r = await ops.ussdReply(answer, timing);
          show(r);
        }
      } finally {
        // Never leave a menu open (the next dial would be taken as its answer).
        if (r?.status === 1) {
          await ops.ussdCancel();
          if (!opts.json && !opts.cancel) io.err('note: the menu was still open: session cancelled\n');
        }
      }
      if (opts.json) printJson(io, replies);
      if (r.status === 4 && !opts.json) {
        io.err(
          `error: the network does not support ${code} on this SIM\nhint: check the code with the operator; some modems need the GSM charset (--profile) for USSD\n`,
        );
      }
      if (r.noReply && !opts.json)
        io.err(`error: the network ended the session for ${code} without a reply (${r.raw})\n`);
      // The network refusing the code (4 not supported, 5 timed out) or ending it with no reply is a failed diagnostic: exit 1.
      if (r.status === 4 || r.status === 5) throw new CommandFailed(`USSD status ${r.status}`);
      if (r.noReply) throw new CommandFailed('USSD session ended by the network without a reply');
    });
  });
}

/** One answer from the terminal; undefined on Ctrl-D / Ctrl-C. (readline loads only when a menu asks.) */
async function ask(io: Io, input: NodeJS.ReadableStream): Promise<string | undefined> {
  const [{ createInterface }, { Writable }] = await Promise.all([import('node:readline'), import('node:stream')]);
  const output = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      io.out(chunk.toString());
      done();
    },
  });
  const rl = createInterface({ input, output, terminal: true });
  return new Promise((resolve) => {
    let answered = false;
    rl.on('SIGINT', () => rl.close());
    rl.on('close', () => {
      if (!answered) {
        io.out('\n');
        resolve(undefined);
      }
    });
    rl.question('reply (empty line ends)> ', (answer) => {
      answered = true;
      rl.close();
      resolve(answer.trim());
    });
  });
}
