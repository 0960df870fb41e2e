/**
 * SerialAtChannel: AT commands over a SerialLink, one in flight at a time, FIFO, each with its own timeout.
 * Every line goes to the URC table first, unless it answers the command in flight. Failures are AtCommandError
 * keeping the modem's words; a closed port rejects at once (isPortClosedError()). After a timeout the channel waits
 * for silence before the next write, so a late answer never ends another command; an unwanted `> ` prompt is
 * cancelled with ESC. Noise is logged once, then summed per noiseReportMs. Data handlers never throw.
 * The PIN/password argument of AT+CPIN/CPIN2/CPWD/CLCK is redacted in logs, errors and the transcript.
 */
import { TranscriptRing, type RingEntry } from './transcript-ring.js';
import { matchUrc, parseUrc, urcComplete, type Collecting } from './urc-lines.js';
import { EventEmitter } from 'node:events';
import { AtCommandError, PortError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { redactAtLine } from '../redact.js';
import type { SerialCloseInfo, SerialLink } from '../serial/link.js';
import { AtFramer } from './framer.js';
import { NoiseReport } from './noise-report.js';
import { FINAL_RESULTS, explainFinal, finalKind, looksLikeFinal, matchFinalResult } from './results.js';
import type {
  AtChannel,
  AtChannelEvents,
  AtResponse,
  AtRunOptions,
  FinalResultEntry,
  FrameEvent,
  UrcEntry,
} from './types.js';

const CTRL_Z = '\x1a';
const ESC = '\x1b';

export interface SerialAtChannelOptions {
  link: SerialLink;
  logger: Logger;
  /** Per-command timeout when run() gets none. Default 5000 ms. */
  defaultTimeoutMs?: number;
  urcs?: readonly UrcEntry[];
  /** Extra final-result rows (checked before the generic table). */
  finalResults?: readonly FinalResultEntry[];
  /** For logs; default the link's path. */
  name?: string;
  /** Silence required after a timeout before the next command is written. Default 200 ms. */
  quietGapMs?: number;
  /** Longest wait for that silence (a chatty modem never goes quiet). Default 2000 ms. */
  maxDrainMs?: number;
  /** Lines kept by transcript(). Default 200. */
  transcriptSize?: number;
  /**
   * Silence after an answer line that lets a command end without a listed final result: a query answered without OK,
   * or a line that looks like an unknown result code. Default 500 ms.
   */
  answerQuietMs?: number;
  /** One summary line of framer garbage per this many ms. Default 60000. */
  noiseReportMs?: number;
}

/** A line that crossed the channel (ms since epoch, which way, the text). */
export type TranscriptEntry = RingEntry;

type Phase = 'queued' | 'command' | 'prompt' | 'payload';

interface Job {
  command: string;
  /** Redacted form used in logs and messages. */
  shown: string;
  payload: string | undefined;
  timeoutMs: number;
  /** No line of the answer for this long times the command out too (AtRunOptions.idleTimeoutMs). */
  idleTimeoutMs: number | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  /** Raw mode: upper-cased prefixes of lines that are this command's response (AtRunOptions.responsePrefixes). */
  responsePrefixes: readonly string[];
  cancelPrompt: boolean;
  lines: string[];
  phase: Phase;
  timer: NodeJS.Timeout | undefined;
  /** Armed at each answer line: answerQuietMs of silence may end the command (see the header). */
  quietTimer: NodeJS.Timeout | undefined;
  resolve: (r: AtResponse) => void;
  reject: (e: Error) => void;
}

const PRINTABLE = /^[\x20-\x7e]+$/;
/** Commands whose answer is free text (manufacturer, model, revision, serial): its last line is never a result code. */
const FREE_TEXT_ANSWER = /^AT(?:\+C?G(?:MI|MM|MR|SN)|I\d*)$/i;

/** The command as it may appear in logs and messages (PINs and passwords hidden). */
export const redactCommand: (command: string) => string = redactAtLine;

/** True when an AT command failed because the port is closed or vanished (the modem layer reopens, not retries). */
export function isPortClosedError(err: unknown): boolean {
  if (err instanceof PortError) return err.code === 'PORT_CLOSED';
  return err instanceof AtCommandError && err.cause instanceof PortError && err.cause.code === 'PORT_CLOSED';
}

export class SerialAtChannel extends EventEmitter<AtChannelEvents> implements AtChannel {
  private readonly link: SerialLink;
  private readonly log: Logger;
  private readonly defaultTimeoutMs: number;
  private readonly quietGapMs: number;
  private readonly maxDrainMs: number;
  private readonly ring: TranscriptRing;
  private readonly answerQuietMs: number;
  private readonly noise: NoiseReport;
  /** Unknown final-looking kinds and commands answered without a final result, each logged once. */
  private readonly loggedOnce = new Set<string>();
  private framer = new AtFramer();
  private urcTable: readonly UrcEntry[];
  private extraFinals: FinalResultEntry[];
  private finals: { extra: FinalResultEntry[]; table: readonly FinalResultEntry[] } | undefined;
  private readonly queue: Job[] = [];
  private active: Job | undefined;
  private collecting: Collecting | undefined;
  private draining: { after: string; quiet: NodeJS.Timeout | undefined; max: NodeJS.Timeout } | undefined;
  private readonly onData = (chunk: Buffer): void => this.handleData(chunk);
  private readonly onClose = (info: SerialCloseInfo): void => this.handleClose(info);
  private readonly onError = (err: Error): void => {
    this.log.warn({ err }, `serial port ${this.link.path} reported an error: ${err.message}`);
  };

  constructor(options: SerialAtChannelOptions) {
    super();
    this.link = options.link;
    this.log = options.logger.child({ at: options.name ?? options.link.path });
    this.defaultTimeoutMs = positive(options.defaultTimeoutMs, 5000);
    this.quietGapMs = positive(options.quietGapMs, 200);
    this.maxDrainMs = positive(options.maxDrainMs, 2000);
    this.ring = new TranscriptRing(Math.max(1, Math.floor(positive(options.transcriptSize, 200))));
    this.answerQuietMs = positive(options.answerQuietMs, 500);
    this.noise = new NoiseReport({ log: this.log, intervalMs: positive(options.noiseReportMs, 60_000) });
    this.urcTable = [...(options.urcs ?? [])];
    this.extraFinals = [...(options.finalResults ?? [])];
    this.link.on('data', this.onData);
    this.link.on('close', this.onClose);
    this.link.on('error', this.onError);
  }

  get isOpen(): boolean {
    return this.link.isOpen;
  }

  setUrcTable(entries: readonly UrcEntry[]): void {
    this.urcTable = [...entries];
  }

  addFinalResults(entries: readonly FinalResultEntry[]): void {
    this.extraFinals = [...this.extraFinals, ...entries];
  }

  run(command: string, options: AtRunOptions = {}): Promise<AtResponse> {
    return this.enqueue(command, undefined, options);
  }

  runWithPrompt(command: string, payload: string, options: AtRunOptions = {}): Promise<AtResponse> {
    return this.enqueue(command, payload, options);
  }

  /** The last lines in and out (oldest first), for diagnostics. */
  transcript(): TranscriptEntry[] {
    return this.ring.entries();
  }

  /** Closes the port; pending and queued commands are rejected. Listeners on the link are kept until dispose(). */
  async close(): Promise<void> {
    await this.link.close();
    // The link's 'close' event normally did this already; a link that was never open emits none.
    this.rejectAll({ disconnected: false });
  }

  /** Detaches from the link (for a link that outlives this channel). */
  dispose(): void {
    this.link.off('data', this.onData);
    this.link.off('close', this.onClose);
    this.link.off('error', this.onError);
    this.rejectAll({ disconnected: false });
    this.noise.stop();
    this.endDrain(false);
  }

  // ---- queue ----

  private enqueue(command: string, payload: string | undefined, options: AtRunOptions): Promise<AtResponse> {
    const shown = typeof command === 'string' ? redactCommand(command) : String(command);
    if (typeof command !== 'string' || !PRINTABLE.test(command)) {
      return Promise.reject(
        new AtCommandError(
          'AT_ERROR',
          `refusing to send ${JSON.stringify(shown)}: an AT command must be non-empty printable ASCII (no CR, LF or control characters)`,
          { command: shown },
        ),
      );
    }
    if (payload !== undefined && (typeof payload !== 'string' || !PRINTABLE.test(payload))) {
      return Promise.reject(
        new AtCommandError(
          'AT_ERROR',
          `refusing to send the payload of ${shown}: it must be non-empty printable ASCII (Ctrl-Z is added by the channel)`,
          { command: shown },
        ),
      );
    }
    if (!this.link.isOpen) return Promise.reject(this.closedError(shown, [], false));
    return new Promise<AtResponse>((resolve, reject) => {
      this.queue.push({
        command,
        shown,
        payload,
        timeoutMs: positive(options.timeoutMs, this.defaultTimeoutMs),
        idleTimeoutMs:
          options.idleTimeoutMs !== undefined && options.idleTimeoutMs > 0
            ? Math.max(options.idleTimeoutMs, this.defaultTimeoutMs)
            : undefined,
        idleTimer: undefined,
        responsePrefixes: (options.responsePrefixes ?? []).map((p) => p.toUpperCase()),
        cancelPrompt: options.cancelPrompt === true,
        lines: [],
        phase: 'queued',
        timer: undefined,
        quietTimer: undefined,
        resolve,
        reject,
      });
      this.pump();
    });
  }

  private pump(): void {
    while (!this.active && !this.draining && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      if (!this.link.isOpen) {
        job.reject(this.closedError(job.shown, [], false));
        continue;
      }
      this.active = job;
      job.phase = job.payload === undefined ? 'command' : 'prompt';
      this.framer.expectEcho(job.command);
      this.record('out', job.shown);
      this.log.debug({ command: job.shown }, 'AT >');
      this.armTimer(job);
      this.write(job, job.command + '\r');
    }
  }

  private write(job: Job, data: string): void {
    this.link.write(data).catch((err: unknown) => {
      if (this.active !== job) return; // already settled (timeout or close came first)
      const cause =
        err instanceof PortError
          ? err
          : new PortError('PORT_IO', `write to ${this.link.path} failed: ${errorMessage(err)}`, { cause: err });
      this.settle(
        job,
        new AtCommandError('AT_ERROR', `${job.shown} failed: ${cause.message}`, {
          command: job.shown,
          lines: job.lines,
          cause,
          hint: cause.hint,
        }),
      );
    });
  }

  private armTimer(job: Job): void {
    if (job.timer) clearTimeout(job.timer);
    job.timer = setTimeout(() => this.timeout(job), job.timeoutMs);
    this.armIdleTimer(job);
  }

  /** (Re)starts the idle timer of a job that has one: at the send and at every line of its answer. */
  private armIdleTimer(job: Job): void {
    if (job.idleTimeoutMs === undefined || job.idleTimeoutMs >= job.timeoutMs) return;
    if (job.idleTimer)
      job.idleTimer.refresh(); // one Timeout per command, not one per line of a long listing
    else job.idleTimer = setTimeout(() => this.timeout(job, true), job.idleTimeoutMs);
  }

  private timeout(job: Job, idle = false): void {
    if (this.active !== job) return;
    const waitingPrompt = job.phase === 'prompt';
    const what = idle
      ? `no line of the answer for ${job.idleTimeoutMs} ms (${job.lines.length} line(s) read)`
      : waitingPrompt
        ? `no '> ' prompt within ${job.timeoutMs} ms`
        : `no answer within ${job.timeoutMs} ms`;
    this.log.warn({ command: job.shown, lines: job.lines }, `${job.shown}: ${what}`);
    if (waitingPrompt) this.cancelPrompt('prompt wait timed out');
    this.settle(
      job,
      new AtCommandError('AT_TIMEOUT', `${job.shown}: ${what}`, {
        command: job.shown,
        lines: job.lines,
        hint: 'check that this is the modem AT port (multi-port modems expose several ttys) and the baud rate; a busy modem may need a longer timeout',
      }),
      true,
    );
  }

  /** Ends the active job; after a timeout, waits for silence before the next command. */
  private settle(job: Job, outcome: AtResponse | Error, timedOut = false): void {
    if (job.timer) clearTimeout(job.timer);
    job.timer = undefined;
    if (job.idleTimer) clearTimeout(job.idleTimer);
    job.idleTimer = undefined;
    if (job.quietTimer) clearTimeout(job.quietTimer);
    job.quietTimer = undefined;
    if (this.active === job) {
      this.active = undefined;
      this.framer.clearEcho();
    }
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
    if (timedOut) this.startDrain(job.shown);
    this.pump();
  }

  private startDrain(after: string): void {
    this.endDrain(false);
    const max = setTimeout(() => this.endDrain(true), this.maxDrainMs);
    this.draining = { after, quiet: undefined, max };
    this.bumpQuiet();
  }

  private bumpQuiet(): void {
    const d = this.draining;
    if (!d) return;
    if (d.quiet) clearTimeout(d.quiet);
    d.quiet = setTimeout(() => this.endDrain(true), this.quietGapMs);
  }

  private endDrain(thenPump: boolean): void {
    const d = this.draining;
    if (!d) return;
    if (d.quiet) clearTimeout(d.quiet);
    clearTimeout(d.max);
    this.draining = undefined;
    if (thenPump) this.pump();
  }

  private cancelPrompt(why: string): void {
    this.log.warn(`AT channel: cancelling a '> ' prompt with ESC (${why})`);
    this.record('out', '<ESC>');
    this.link.write(ESC).catch((err: unknown) => {
      this.log.warn({ err }, `could not cancel the prompt on ${this.link.path}: ${errorMessage(err)}`);
    });
  }

  // ---- incoming ----

  private handleData(chunk: Buffer): void {
    try {
      if (this.draining) this.bumpQuiet();
      for (const ev of this.framer.push(chunk)) this.handleFrame(ev);
    } catch (err) {
      this.log.error({ err }, `AT channel: internal error while handling modem data: ${errorMessage(err)}`);
    }
  }

  private handleFrame(ev: FrameEvent): void {
    if (ev.type === 'garbage') {
      this.record('in', `<garbage ${ev.bytes.length} bytes: ${ev.reason}>`);
      this.noise.note(ev.bytes, ev.reason);
      this.safeEmit('garbage', ev.bytes, ev.reason);
      return;
    }
    if (ev.type === 'prompt') {
      this.record('in', '> ');
      const job = this.active;
      if (job && job.phase === 'prompt' && job.payload !== undefined) {
        job.phase = 'payload';
        this.armTimer(job);
        this.framer.expectEcho(job.payload);
        this.record('out', `${job.payload}<Ctrl-Z>`);
        this.write(job, job.payload + CTRL_Z);
      } else if (job && job.cancelPrompt) {
        // Raw mode: the operator asked for the prompt to be left (Esc); the modem's final result ends the command.
        this.log.debug({ command: job.shown }, 'AT channel: cancelling the expected prompt with ESC');
        this.record('out', '<ESC>');
        this.write(job, ESC);
      } else {
        this.cancelPrompt(job ? `unexpected during ${job.shown}` : 'no command waits for it');
      }
      return;
    }
    this.handleLine(ev.text);
  }

  private handleLine(text: string): void {
    this.record('in', text);
    const col = this.collecting;
    if (col) {
      if (matchFinalResult(text, this.finalTable(), this.active?.command)) {
        this.collecting = undefined;
        this.log.warn(
          { urc: col.entry.name, lines: col.lines },
          `URC ${col.entry.name} cut short by final result ${text}`,
        );
        this.emitUrc(col.entry, col.lines);
        // fall through: the final result still ends the command in flight
      } else {
        col.lines.push(text);
        if (this.urcDone(col)) {
          this.collecting = undefined;
          this.emitUrc(col.entry, col.lines);
        }
        return;
      }
    }
    const entry = this.matchUrc(text);
    if (entry) {
      const c: Collecting = { entry, lines: [text] };
      if (this.urcDone(c)) this.emitUrc(entry, c.lines);
      else this.collecting = c;
      return;
    }
    const job = this.active;
    if (job) {
      const fin = matchFinalResult(text, this.finalTable(), job.command);
      if (!fin) {
        job.lines.push(text);
        this.armIdleTimer(job);
        this.armQuietTimer(job);
        return;
      }
      if (fin.ok) {
        if (fin.entry.isAnswer) job.lines.push(text);
        this.log.debug({ command: job.shown, lines: job.lines, final: text }, 'AT <');
        this.settle(job, { command: job.command, lines: job.lines, final: text });
      } else {
        const shownFinal = explainFinal(text);
        this.log.debug({ command: job.shown, lines: job.lines, final: text }, `${job.shown} failed: ${shownFinal}`);
        this.settle(
          job,
          new AtCommandError('AT_ERROR', `${job.shown} failed: ${shownFinal}`, {
            command: job.shown,
            final: text,
            errorCode: fin.errorCode,
            lines: job.lines,
          }),
        );
      }
      return;
    }
    const late = this.draining ? ` (probably a late answer to ${this.draining.after})` : '';
    this.log.debug({ line: text }, `unexpected line from the modem${late}`);
    this.safeEmit('unexpected', text);
  }

  /** (Re)starts the quiet timer of the command in flight at each line of its answer (not during a prompt wait). */
  private armQuietTimer(job: Job): void {
    if (job.phase === 'prompt') return;
    const last = job.lines[job.lines.length - 1] ?? '';
    // An unknown result code is decided after three times the quiet time (a stalled event loop must not turn a slow
    // OK into an error); identification answers are free text (`QUECTEL`, `WAVECOM MODEM`), never a result code.
    const finalLike = looksLikeFinal(last) && !FREE_TEXT_ANSWER.test(job.command);
    const ms = finalLike ? this.answerQuietMs * 3 : this.answerQuietMs;
    if (job.quietTimer) clearTimeout(job.quietTimer);
    job.quietTimer = setTimeout(() => this.quietAfterAnswer(job), ms);
  }

  /** answerQuietMs without a line after an answer line: an unknown final result, or a query answered without OK. */
  private quietAfterAnswer(job: Job): void {
    job.quietTimer = undefined;
    if (this.active !== job) return;
    const last = job.lines[job.lines.length - 1];
    if (last === undefined) return;
    if (looksLikeFinal(last) && !FREE_TEXT_ANSWER.test(job.command)) {
      job.lines.pop();
      const kind = `final:${finalKind(last)}`;
      if (!this.loggedOnce.has(kind)) {
        this.loggedOnce.add(kind);
        this.log.warn(
          { command: job.shown, line: last },
          `${job.shown}: the modem ended it with '${last}', a result code the bridge does not know: taken as an error (logged once per kind)`,
        );
      }
      this.settle(
        job,
        new AtCommandError('AT_ERROR', `${job.shown} failed: ${last} (a result code the bridge does not know)`, {
          command: job.shown,
          final: last,
          lines: job.lines,
        }),
        true,
      );
      return;
    }
    if (job.phase === 'command' && job.command.endsWith('?')) {
      const kind = `nofinal:${job.command.toUpperCase()}`;
      if (!this.loggedOnce.has(kind)) {
        this.loggedOnce.add(kind);
        this.log.info(
          { command: job.shown, lines: job.lines },
          `${job.shown}: answered without a final result (no OK after ${this.answerQuietMs} ms of silence): answer accepted (logged once per command)`,
        );
      }
      this.settle(job, { command: job.command, lines: job.lines, final: '' }, true);
    }
  }

  private finalTable(): readonly FinalResultEntry[] {
    // Built once per change of extraFinals (every line of an answer is matched against it).
    if (this.finals?.extra !== this.extraFinals)
      this.finals = {
        extra: this.extraFinals,
        table: this.extraFinals.length === 0 ? FINAL_RESULTS : [...this.extraFinals, ...FINAL_RESULTS],
      };
    return this.finals.table;
  }

  private matchUrc(text: string): UrcEntry | undefined {
    return matchUrc(text, this.urcTable, this.active);
  }

  private urcDone(c: Collecting): boolean {
    return urcComplete(c.entry, c.lines, (fields, line) => this.log.warn(fields, line));
  }

  private emitUrc(entry: UrcEntry, lines: string[]): void {
    this.log.debug({ urc: entry.name, lines }, 'URC');
    this.safeEmit(
      'urc',
      parseUrc(entry, lines, (fields, line) => this.log.warn(fields, line)),
    );
  }

  private handleClose(info: SerialCloseInfo): void {
    try {
      const rest = this.framer.flush();
      if (rest.length > 0) this.log.debug({ events: rest.length }, 'partial modem output dropped at close');
      this.framer = new AtFramer();
      if (this.collecting) {
        this.log.warn(
          { urc: this.collecting.entry.name, lines: this.collecting.lines },
          'port closed in the middle of a multi-line URC: dropped',
        );
        this.collecting = undefined;
      }
      this.endDrain(false);
      this.noise.stop();
      this.rejectAll(info);
      this.log.info(
        { disconnected: info.disconnected },
        info.disconnected ? `serial port ${this.link.path} vanished` : `serial port ${this.link.path} closed`,
      );
    } catch (err) {
      this.log.error({ err }, `AT channel: internal error while closing: ${errorMessage(err)}`);
    }
    this.safeEmit(
      'close',
      info.error ? { disconnected: info.disconnected, error: info.error } : { disconnected: info.disconnected },
    );
  }

  private rejectAll(info: { disconnected: boolean }): void {
    const jobs = this.active ? [this.active, ...this.queue] : [...this.queue];
    this.active = undefined;
    this.queue.length = 0;
    for (const job of jobs) {
      if (job.timer) clearTimeout(job.timer);
      job.timer = undefined;
      if (job.quietTimer) clearTimeout(job.quietTimer);
      job.quietTimer = undefined;
      if (job.idleTimer) clearTimeout(job.idleTimer);
      job.idleTimer = undefined;
      job.reject(this.closedError(job.shown, job.lines, info.disconnected));
    }
  }

  private closedError(shown: string, lines: readonly string[], disconnected: boolean): AtCommandError {
    const path = this.link.path;
    const cause = disconnected
      ? new PortError('PORT_CLOSED', `serial port ${path} vanished (unplugged or USB reset)`, {
          hint: 'check the USB cable and power; the modem may have reset and re-enumerated',
        })
      : new PortError('PORT_CLOSED', `serial port ${path} is closed`);
    return new AtCommandError('AT_ERROR', `${shown} failed: ${cause.message}`, {
      command: shown,
      lines,
      cause,
      hint: cause.hint,
    });
  }

  private record(dir: 'in' | 'out', text: string): void {
    this.ring.add({ at: Date.now(), dir, text });
  }

  private safeEmit<K extends keyof AtChannelEvents>(event: K, ...args: AtChannelEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: AtChannelEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.log.error({ err, event }, `a '${String(event)}' listener threw: ${errorMessage(err)}`);
    }
  }
}

function positive(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}
