/**
 * A scripted AtChannel for modem tests: answers commands from a transcript or a table and emits URCs, classifying
 * modem lines the way the real channel does (final-result table, then the installed URC table with `responseTo`
 * and `extraLines`). It never waits: a command whose answer has no final result ends as the real channel ends it after
 * its quiet time (a last line that looks like a result code: AT_ERROR; a query `...?` with an answer: accepted with
 * final ''), else it rejects at once with AT_TIMEOUT.
 *
 * Transcript format (test/fixtures/transcripts/<family>/*.txt), one item per line:
 *   # comment            blank lines and comments are ignored
 *   > AT+CSQ             the host sends this command; it must be the next command the code under test runs (exact)
 *   >> 0011000B91...     the payload sent after the `> ` prompt (runWithPrompt); checked when present
 *   < +CSQ: 20,99        a modem line answering the command above
 *   ! +CMTI: "SM",1      a modem line that arrives on its own (an unsolicited line): written where it arrived
 * Lines of a block up to its final result arrive while the command is in flight (a URC there is emitted before the
 * command settles, like `+CUSD` before the `OK` of AT+CUSD). Lines after the final result, and `!` lines before the
 * first command, are unsolicited: they are emitted on the next turn of the event loop (or when the next command is
 * sent, whichever is first), as 'urc' when a URC row matches, else as 'unexpected'.
 *
 * Table mode: rows [command (exact string or RegExp), lines or (command, payload) => lines]; a line prefixed `! `
 * arrives after the final result. An unknown command is answered ERROR (and listed in `unmatched`).
 *
 * Mismatches with a transcript are collected in `problems`; tests call expectDone() at the end.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type {
  AtChannel,
  AtChannelEvents,
  AtResponse,
  AtRunOptions,
  FinalResultEntry,
  UrcEntry,
} from '../../src/at/types.js';
import { looksLikeFinal } from '../../src/at/results.js';
import { AtCommandError } from '../../src/errors.js';

const realSetImmediate = globalThis.setImmediate;

export const FAKE_FINAL_RESULTS: readonly FinalResultEntry[] = [
  { pattern: /^OK$/, ok: true },
  { pattern: /^ERROR$/, ok: false },
  { pattern: /^\+CME ERROR:/, ok: false, code: (l) => numberAfterColon(l) },
  { pattern: /^\+CMS ERROR:/, ok: false, code: (l) => numberAfterColon(l) },
  { pattern: /^(NO CARRIER|BUSY|NO ANSWER|NO DIALTONE)$/, ok: false },
];

function numberAfterColon(line: string): number | undefined {
  const m = /:\s*(\d+)\s*$/.exec(line);
  return m ? Number(m[1]) : undefined;
}

interface Step {
  command: string;
  payload: string | undefined;
  lines: string[];
  lineNo: number;
}

type TableAnswer = string[] | ((command: string, payload?: string) => string[]);
export type TableRow = [string | RegExp, TableAnswer];

export function parseTranscript(text: string): { leading: string[]; steps: Step[] } {
  const leading: string[] = [];
  const steps: Step[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/\s+$/, '');
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const m = /^(>>|>|<|!) ?(.*)$/.exec(line);
    if (!m) throw new Error(`transcript line ${i + 1}: expected '>', '>>', '<' or '!': ${raw}`);
    const [, kind, body] = m as unknown as [string, string, string];
    const step = steps[steps.length - 1];
    if (kind === '>') steps.push({ command: body, payload: undefined, lines: [], lineNo: i + 1 });
    else if (kind === '>>') {
      if (!step) throw new Error(`transcript line ${i + 1}: payload before any command`);
      step.payload = body;
    } else if (!step) leading.push(body);
    else step.lines.push(body);
  });
  return { leading, steps };
}

export class FakeChannel extends EventEmitter<AtChannelEvents> implements AtChannel {
  /** Every command sent, in order. */
  readonly sent: string[] = [];
  /** Payloads sent after a prompt. */
  readonly payloads: string[] = [];
  /** Transcript mismatches (tests expect none). */
  readonly problems: string[] = [];
  /** Table mode: commands no row answered. */
  readonly unmatched: string[] = [];
  urcTable: readonly UrcEntry[] = [];
  readonly finalResults: FinalResultEntry[] = [...FAKE_FINAL_RESULTS];
  private open = true;
  private readonly steps: Step[];
  private readonly table: TableRow[] | undefined;
  private pending: string[];
  private flushScheduled = false;

  private constructor(steps: Step[], leading: string[], table: TableRow[] | undefined) {
    super();
    this.steps = steps;
    this.pending = [...leading];
    this.table = table;
    if (this.pending.length > 0) this.scheduleFlush();
  }

  static fromTranscript(text: string): FakeChannel {
    const { leading, steps } = parseTranscript(text);
    return new FakeChannel(steps, leading, undefined);
  }

  static fromFile(path: string | URL): FakeChannel {
    return FakeChannel.fromTranscript(readFileSync(path, 'utf8'));
  }

  static fromTable(rows: TableRow[]): FakeChannel {
    return new FakeChannel([], [], rows);
  }

  get isOpen(): boolean {
    return this.open;
  }

  setUrcTable(entries: readonly UrcEntry[]): void {
    this.urcTable = entries;
  }

  addFinalResults(entries: readonly FinalResultEntry[]): void {
    this.finalResults.push(...entries);
  }

  async close(): Promise<void> {
    this.open = false;
  }

  /** The device vanished: later commands fail and 'close' is emitted. */
  disconnect(): void {
    this.open = false;
    this.emit('close', { disconnected: true });
  }

  /** Modem lines arriving now with no command in flight. */
  emitLines(...lines: string[]): void {
    this.flush();
    this.pending.push(...lines);
    this.flush();
  }

  /** Transcript steps not yet consumed (command texts). */
  remaining(): string[] {
    return this.steps.map((s) => s.command);
  }

  /** Throws when the transcript was not followed exactly or not used up. */
  expectDone(): void {
    this.flush();
    const left = this.remaining();
    const issues = [...this.problems, ...(left.length > 0 ? [`commands never sent: ${left.join(', ')}`] : [])];
    if (issues.length > 0) throw new Error(`transcript not followed:\n${issues.join('\n')}`);
  }

  run(command: string, _options?: AtRunOptions): Promise<AtResponse> {
    return this.exchange(command, undefined);
  }

  runWithPrompt(command: string, payload: string, _options?: AtRunOptions): Promise<AtResponse> {
    this.payloads.push(payload);
    return this.exchange(command, payload);
  }

  private async exchange(command: string, payload: string | undefined): Promise<AtResponse> {
    this.flush();
    this.sent.push(command);
    if (!this.open) throw new AtCommandError('AT_ERROR', `${command}: port closed`, { command });
    return this.answer(command, this.linesFor(command, payload));
  }

  private linesFor(command: string, payload: string | undefined): string[] {
    if (this.table) {
      const row = this.table.find(([key]) => (typeof key === 'string' ? key === command : key.test(command)));
      if (!row) {
        this.unmatched.push(command);
        return ['ERROR'];
      }
      const answer = row[1];
      const lines = typeof answer === 'function' ? answer(command, payload) : answer;
      return lines.map((l) => (l.startsWith('! ') ? `\u0000${l.slice(2)}` : l));
    }
    const step = this.steps[0];
    if (!step) {
      this.problems.push(`command ${command} sent after the end of the transcript`);
      return [];
    }
    if (step.command !== command) {
      this.problems.push(`line ${step.lineNo}: expected ${step.command}, got ${command}`);
      return [];
    }
    this.steps.shift();
    if (step.payload !== undefined && step.payload !== payload) {
      this.problems.push(`line ${step.lineNo}: payload ${String(payload)} differs from ${step.payload}`);
    }
    return step.lines;
  }

  private finalFor(line: string, command: string): FinalResultEntry | undefined {
    return this.finalResults.find(
      (f) =>
        (f.command === undefined || command.toUpperCase().startsWith(f.command.toUpperCase())) && f.pattern.test(line),
    );
  }

  private urcFor(line: string, command: string | undefined): UrcEntry | undefined {
    const entry = this.urcTable.find((e) => e.pattern.test(line));
    if (!entry) return undefined;
    if (command !== undefined && entry.responseTo?.some((p) => command.toUpperCase().startsWith(p.toUpperCase())))
      return undefined;
    return entry;
  }

  private emitUrc(entry: UrcEntry, lines: string[]): void {
    this.emit('urc', { name: entry.name, lines, data: entry.parse ? entry.parse(lines) : {} });
  }

  private answer(command: string, all: string[]): Promise<AtResponse> {
    // Table lines marked with \0 arrive after the final result.
    const lines = all.filter((l) => !l.startsWith('\u0000'));
    const after = all.filter((l) => l.startsWith('\u0000')).map((l) => l.slice(1));
    const response: string[] = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const final = this.finalFor(line, command);
      if (final) {
        this.pending.push(...lines.slice(i + 1), ...after);
        this.scheduleFlush();
        if (final.isAnswer) response.push(line);
        if (final.ok) return Promise.resolve({ command, lines: response, final: line });
        return Promise.reject(
          new AtCommandError('AT_ERROR', `${command}: ${line}`, {
            command,
            final: line,
            errorCode: final.code?.(line),
            lines: response,
          }),
        );
      }
      const urc = this.urcFor(line, command);
      if (urc) {
        const extra = lines.slice(i + 1, i + 1 + (urc.extraLines ?? 0));
        i += extra.length;
        this.emitUrc(urc, [line, ...extra]);
        continue;
      }
      response.push(line);
    }
    this.pending.push(...after);
    this.scheduleFlush();
    const last = response[response.length - 1];
    if (last !== undefined && looksLikeFinal(last)) {
      response.pop();
      return Promise.reject(
        new AtCommandError('AT_ERROR', `${command} failed: ${last} (a result code the bridge does not know)`, {
          command,
          final: last,
          lines: response,
        }),
      );
    }
    if (last !== undefined && command.endsWith('?')) return Promise.resolve({ command, lines: response, final: '' });
    return Promise.reject(
      new AtCommandError('AT_TIMEOUT', `${command}: no final result`, { command, lines: response }),
    );
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.pending.length === 0) return;
    this.flushScheduled = true;
    realSetImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** Emits the unsolicited lines waiting to arrive. */
  flush(): void {
    while (this.pending.length > 0) {
      const line = this.pending.shift()!;
      const urc = this.urcFor(line, undefined);
      if (urc) {
        const extra = this.pending.splice(0, urc.extraLines ?? 0);
        this.emitUrc(urc, [line, ...extra]);
      } else {
        this.emit('unexpected', line);
      }
    }
  }
}

/** Lets the fake deliver lines queued after the last answer (one turn of the real event loop). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => realSetImmediate(resolve));
}
