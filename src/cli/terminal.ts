/**
 * The interactive AT terminal (`pulsa-bridge at` with no command): one command per line, answered in order (each
 * waits for the one before: one command in flight on the channel); URCs and stray lines shown as they arrive;
 * a modem error shows the modem's own words plus what its code means. On a TTY there is a prompt, line editing and
 * history; piped input gets the answers alone. Ends on Ctrl-C, Ctrl-D, end of input or the port closing, after the
 * last answer is printed.
 */
import { createInterface } from 'node:readline';
import { explainFinal } from '../at/results.js';
import { AtCommandError } from '../errors.js';
import type { Io } from './io.js';
import { formatError } from './lifecycle.js';
import type { Session } from './session.js';

export async function interactiveAt(s: Session, io: Io): Promise<void> {
  const input = io.input ?? process.stdin;
  const tty = (input as { isTTY?: boolean }).isTTY === true;
  // The prompt and line editing only on a terminal; piped input gets the answers alone (all through io).
  const rl = createInterface({ input, ...(tty ? { output: process.stdout } : {}), terminal: tty, historySize: 200, prompt: 'AT> ' });
  const onUrc = (u: { lines: string[] }) => io.out(`\n[urc] ${u.lines.join(' | ')}\n`);
  const onUnexpected = (line: string) => io.out(`\n[modem] ${line}\n`);
  const onClose = (info: { disconnected: boolean }) => {
    io.err(`\nport closed${info.disconnected ? ' (device vanished)' : ''}\n`);
    rl.close();
  };
  s.channel.on('urc', onUrc);
  s.channel.on('unexpected', onUnexpected);
  s.channel.on('close', onClose);
  io.out('interactive AT terminal: type commands (e.g. AT+CSQ); Ctrl-C or Ctrl-D exits\n');
  rl.prompt();
  let queue = Promise.resolve();
  await new Promise<void>((resolve) => {
    rl.on('line', (line) => {
      const cmd = line.trim();
      if (!cmd) return rl.prompt();
      queue = queue.then(async () => {
        try {
          const r = await s.channel.run(cmd);
          io.out([...r.lines, r.final].join('\n') + '\n');
        } catch (err) {
          if (err instanceof AtCommandError && err.final !== undefined) {
            // The modem's own words, then what its error code means when the table knows it.
            io.out([...err.lines, err.final].join('\n') + '\n');
            const explained = explainFinal(err.final);
            if (explained !== err.final) io.out(`note: ${explained}\n`);
          } else io.out(formatError(err));
        }
        rl.prompt();
      });
    });
    rl.on('SIGINT', () => rl.close());
    rl.on('close', () => void queue.then(resolve));
  });
  s.channel.off('urc', onUrc);
  s.channel.off('unexpected', onUnexpected);
  s.channel.off('close', onClose);
}
