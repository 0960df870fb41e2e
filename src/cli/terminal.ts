/**
 * The interactive AT terminal (`pulsa-bridge at` with no command), through the running daemon (its URCs shown as they
 * arrive while it keeps reading SMS) or on the port. One AT line per input line, answered in order, every response line
 * shown whole with what a modem error's code means; a line without `AT` gets it prefixed, with a note. A prompting
 * command shows `> ` and reads the message: Ctrl-Z sends, Esc cancels. Prompt, editing and history on a TTY only.
 * Ends on Ctrl-C, Ctrl-D, end of input or the daemon closing, after the last answer is printed.
 */
import { createInterface } from 'node:readline';
import { explainFinal } from '../at/results.js';
import { checkAtLine } from '../ops/at-guard.js';
import type { AtOutcome, ModemOps } from '../ops/modem-ops.js';
import type { EventMessage } from '../control/protocol.js';
import type { Io } from './io.js';
import { formatError } from './lifecycle.js';
import { safeJson, safeText } from '../terminal-text.js';

export type TerminalOps = Pick<ModemOps, 'at' | 'onEvent'>;

/** Commands the modem answers with a `> ` prompt for the message text. */
const PROMPTING = /^AT\+CMG[SWC]=/i;
const CTRL_Z = '\x1a';
const ESC = '\x1b';

/** The line to send for what the operator typed, and a note when it was changed (no `AT` in front). */
export function terminalLine(typed: string): { line: string; note?: string } {
  const t = typed.trim();
  const verdict = checkAtLine(t);
  if (!verdict.notAt) return { line: t };
  const suggestion = /did you mean "(.*)"\?$/.exec(verdict.notAt)?.[1];
  if (suggestion === undefined) return { line: t };
  return { line: suggestion, note: `"${t}" does not start with AT: sent as ${suggestion}` };
}

/** How an outcome is shown: the modem's lines and final result, and the meaning of an error code. */
export function formatOutcome(r: AtOutcome): string {
  let out = [...r.lines, r.final].map((l) => safeText(l)).join('\n') + '\n';
  if (!r.ok) {
    const explained = explainFinal(r.final);
    if (explained !== r.final) out += `note: ${explained}\n`;
  }
  return out;
}

/**
 * One line per event worth showing while the operator types: URCs whole, an SMS the daemon spooled (sender and id),
 * a delivery that ended (delivered or dead; retries are not shown: they would flood the terminal), USSD replies.
 */
export function formatEvent(e: EventMessage): string | undefined {
  if (e.event === 'closing') return '\n[daemon] closing: the terminal ends\n';
  const data = (e.data ?? {}) as {
    lines?: unknown;
    id?: unknown;
    sender?: unknown;
    status?: unknown;
    outcome?: unknown;
  };
  if (e.event === 'urc')
    return Array.isArray(data.lines) ? `\n[urc] ${data.lines.join(' | ')}\n` : `\n[urc] ${JSON.stringify(e.data)}\n`;
  if (e.event === 'sms') return `\n[sms] spooled ${String(data.id)} from ${String(data.sender)}\n`;
  if (e.event === 'delivery') {
    if (data.status === 'retry') return undefined;
    return `\n[delivery] ${String(data.id)}: ${String(data.status)}${data.outcome !== undefined ? ` (${String(data.outcome)})` : ''}\n`;
  }
  return `\n[${e.event}] ${JSON.stringify(e.data)}\n`;
}

export async function interactiveAt(ops: TerminalOps, io: Io, o: { timeoutMs?: number } = {}): Promise<void> {
  const input = io.input ?? process.stdin;
  const tty = (input as { isTTY?: boolean }).isTTY === true;
  // Events first: readline starts reading once created, and a line or the end of input it reads before its listeners
  // are on is lost (the terminal then never returned), so nothing awaits between creating it and listening to it.
  let live: ReturnType<typeof createInterface> | undefined;
  let closing = false;
  /** readline closed: answers still queued when the input ended are printed after that; Node 24 throws on a prompt. */
  let ended = false;
  const off = await ops.onEvent((e) => {
    const event = formatEvent(e);
    const shown = event === undefined ? undefined : safeText(event, { multiline: true });
    if (!shown) return;
    io.out(shown);
    if (e.event === 'closing') {
      closing = true;
      live?.close();
    } else if (tty && !ended) live?.prompt(true); // the prompt and what was typed so far, again below the event
  });
  // The prompt and line editing only on a terminal; piped input gets the answers alone (all through io).
  const rl = createInterface({
    input,
    ...(tty ? { output: process.stdout } : {}),
    terminal: tty,
    historySize: 200,
    prompt: 'AT> ',
  });
  rl.once('close', () => (ended = true));
  const prompt = (text?: string): void => {
    if (ended) return;
    if (text !== undefined) rl.setPrompt(text);
    rl.prompt();
  };
  io.out(
    'interactive AT terminal: type commands (e.g. AT+CSQ); Ctrl-C or Ctrl-D exits; after AT+CMGS=..., Ctrl-Z sends the message and Esc cancels\n',
  );
  prompt();

  let queue = Promise.resolve();
  /** The prompting command whose message is being typed. */
  let body: { line: string; text: string[] } | undefined;

  const send = (line: string, extra: { body?: string; cancelPrompt?: boolean } = {}): void => {
    queue = queue.then(async () => {
      try {
        const r = await ops.at(line, { ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}), ...extra });
        io.out(formatOutcome(r));
      } catch (err) {
        io.out(formatError(err));
      }
      prompt('AT> ');
    });
  };

  const finishBody = (how: 'send' | 'cancel', last: string): void => {
    const b = body;
    if (!b) return;
    body = undefined;
    if (last !== '') b.text.push(last);
    if (how === 'cancel') {
      io.out('(cancelled: Esc sent, nothing was sent as a message)\n');
      send(b.line, { cancelPrompt: true });
    } else send(b.line, { body: b.text.join('\r') });
  };

  const onLine = (typed: string): void => {
    if (body) {
      const z = typed.indexOf(CTRL_Z);
      const esc = typed.indexOf(ESC);
      if (esc >= 0 && (z < 0 || esc < z)) return finishBody('cancel', '');
      if (z >= 0) return finishBody('send', typed.slice(0, z));
      body.text.push(typed);
      return prompt();
    }
    if (typed.trim() === '') return prompt();
    const { line, note } = terminalLine(typed);
    if (note) io.out(`note: ${note}\n`);
    if (PROMPTING.test(line)) {
      body = { line, text: [] };
      if (tty) {
        prompt('> ');
      } else io.out('> \n');
      return;
    }
    send(line);
  };

  // On a terminal Ctrl-Z would suspend the process and Esc is a key, not a character: catch both while a message
  // is typed. Outside a message Ctrl-Z does nothing (suspending would leave the modem's prompt hanging).
  const onCtrlZ = (): void => {
    if (!body) return;
    const typed = rl.line;
    (rl as unknown as { line: string }).line = '';
    io.out('\n');
    finishBody('send', typed);
  };
  const onKey = (_s: string | undefined, key: { name?: string } | undefined): void => {
    if (body && key?.name === 'escape') {
      (rl as unknown as { line: string }).line = '';
      io.out('\n');
      finishBody('cancel', '');
    }
  };
  if (tty) {
    rl.on('SIGTSTP', onCtrlZ);
    input.on('keypress', onKey);
  }

  await new Promise<void>((resolve) => {
    rl.on('line', onLine);
    rl.on('SIGINT', () => rl.close());
    rl.on('close', () => {
      if (body) {
        // Input ended in the middle of a message: nothing is sent.
        body = undefined;
        io.out('(message not sent: input ended before Ctrl-Z)\n');
      }
      void queue.then(resolve);
    });
    live = rl;
    if (closing) rl.close(); // the daemon said it was closing before the terminal was up
  });
  if (tty) input.off('keypress', onKey);
  off();
}
