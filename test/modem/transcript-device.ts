/**
 * A transcript (test/fixtures/transcripts, the format of fake-channel.ts) served as a device behind the virtual serial
 * link, so the real AT channel (framer, final-result table, quiet time, URC split) and the modem replay it: each
 * command written must be the transcript's next one; its block goes out as the modem would send it (`\r\n<line>\r\n`
 * per line, `!` lines in their place). Mismatches are collected in `problems`.
 */
import { readFileSync } from 'node:fs';
import type { DeviceSide, VirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { parseTranscript } from './fake-channel.js';

export class TranscriptDevice implements VirtualDevice {
  present = true;
  readonly problems: string[] = [];
  readonly sent: string[] = [];
  private side: DeviceSide | undefined;
  private buf = '';
  private readonly steps: ReturnType<typeof parseTranscript>['steps'];
  private readonly leading: string[];

  constructor(path: string | URL) {
    const parsed = parseTranscript(readFileSync(path, 'utf8'));
    this.steps = parsed.steps;
    this.leading = parsed.leading;
  }

  onAttach(side: DeviceSide): void {
    this.side = side;
    if (this.leading.length > 0) side.emit(this.leading.map((l) => `\r\n${l}\r\n`).join(''));
  }

  onDetach(): void {
    this.side = undefined;
  }

  onWrite(chunk: Buffer): void {
    this.buf += chunk.toString('latin1');
    let cr: number;
    while ((cr = this.buf.indexOf('\r')) >= 0) {
      const command = this.buf.slice(0, cr).trim();
      this.buf = this.buf.slice(cr + 1);
      if (command !== '') this.answer(command);
    }
  }

  /** Transcript commands never sent. */
  remaining(): string[] {
    return this.steps.map((s) => s.command);
  }

  private answer(command: string): void {
    this.sent.push(command);
    const step = this.steps[0];
    if (!step) return void this.problems.push(`${command} sent after the end of the transcript`);
    if (step.command !== command)
      return void this.problems.push(`line ${step.lineNo}: expected ${step.command}, got ${command}`);
    this.steps.shift();
    const side = this.side;
    if (side && step.lines.length > 0) setImmediate(() => side.emit(step.lines.map((l) => `\r\n${l}\r\n`).join('')));
  }
}
