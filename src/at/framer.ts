/**
 * AtFramer (PURE): raw bytes from a modem -> FrameEvents (lines, the `> ` prompt, garbage). The events depend only on
 * the bytes and where expectEcho() was called, never on how they were split into chunks.
 * Lines end at CR or LF, are trimmed, empty ones dropped; Ctrl-Z and ESC (our own echoed terminators) are removed.
 * A line is garbage unless it is plausible text (ASCII, UTF-8 or sparse Latin-1); noise glued to a good line's ends is
 * split off. Pending bytes never exceed MAX_LINE_BYTES.
 */
import type { FrameEvent } from './types.js';

export const MAX_LINE_BYTES = 4096;

const CR = 0x0d;
const LF = 0x0a;
const CTRL_Z = 0x1a;
const ESC = 0x1b;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes that never belong to text: C0 controls except TAB, DEL, C1 controls, 0xFE, 0xFF. */
function isNoiseByte(b: number): boolean {
  return (b < 0x20 && b !== 0x09) || b === 0x7f || (b >= 0x80 && b <= 0x9f) || b === 0xfe || b === 0xff;
}

function hasC0(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

// Indexed loops over bytes here and below: the hot path of every line read, kept free of per-byte iterator objects.
function isPlainAscii(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b < 0x20 && b !== 0x09) || b >= 0x7f) return false;
  }
  return true;
}

/** Decodes bytes as text, or undefined when they do not look like text (see header). */
function decodeText(bytes: Buffer): string | undefined {
  if (isPlainAscii(bytes)) return bytes.toString('latin1');
  try {
    const s = utf8.decode(bytes);
    if (!hasC0(s)) return s;
  } catch {
    // not UTF-8: try Latin-1 below
  }
  let high = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (isNoiseByte(b)) return undefined;
    if (b >= 0x80) high++;
  }
  if (high * 4 > bytes.length) return undefined;
  return bytes.toString('latin1');
}

const TRIM = /^[ \t]+|[ \t]+$/g;

export class AtFramer {
  /** Pending bytes of the current line, as a latin1 string (one char per byte). */
  private cur = '';
  /** The current line already overflowed MAX_LINE_BYTES: its remaining bytes are garbage. */
  private overflowed = false;
  private echo: string | undefined;
  private readonly maxLineBytes: number;

  /** `maxLineBytes` bounds a line without a line end (default MAX_LINE_BYTES; tests use small values). */
  constructor(options: { maxLineBytes?: number } = {}) {
    const max = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.maxLineBytes = Number.isInteger(max) && max >= 2 ? max : MAX_LINE_BYTES;
  }

  /** Arms echo removal for the next line equal to `text` (case-insensitive, trimmed). Replaces a previous one. */
  expectEcho(text: string): void {
    const t = text.replace(TRIM, '').toUpperCase();
    this.echo = t === '' ? undefined : t;
  }

  clearEcho(): void {
    this.echo = undefined;
  }

  push(chunk: Buffer): FrameEvent[] {
    const out: FrameEvent[] = [];
    const s = chunk.toString('latin1');
    let i = 0;
    while (i < s.length) {
      if (!this.overflowed) {
        if (this.cur === '' && s.charCodeAt(i) === 0x3e && s.charCodeAt(i + 1) === 0x20) {
          out.push({ type: 'prompt' });
          i += 2;
          continue;
        }
        if (this.cur === '>' && s.charCodeAt(i) === 0x20) {
          out.push({ type: 'prompt' });
          this.cur = '';
          i += 1;
          continue;
        }
      }
      let end = i;
      while (end < s.length) {
        const c = s.charCodeAt(end);
        if (c === CR || c === LF) break;
        // Stop right after a lone '>' at line start so the prompt check above sees it.
        if (!this.overflowed && this.cur === '' && end === i && c === 0x3e) {
          end++;
          break;
        }
        end++;
      }
      if (end > i) this.append(s.slice(i, end), out);
      i = end;
      if (i < s.length) {
        const c = s.charCodeAt(i);
        if (c === CR || c === LF) {
          this.finishLine(out);
          i++;
        }
      }
    }
    return out;
  }

  /** Ends the stream (port closed): the pending partial line is emitted as a line or garbage. */
  flush(): FrameEvent[] {
    const out: FrameEvent[] = [];
    this.finishLine(out);
    return out;
  }

  private append(text: string, out: FrameEvent[]): void {
    this.cur += text;
    while (this.cur.length >= this.maxLineBytes) {
      out.push({
        type: 'garbage',
        bytes: Buffer.from(this.cur.slice(0, this.maxLineBytes), 'latin1'),
        reason: `line longer than ${this.maxLineBytes} bytes without a line end`,
      });
      this.cur = this.cur.slice(this.maxLineBytes);
      this.overflowed = true;
    }
  }

  private finishLine(out: FrameEvent[]): void {
    const raw = this.cur;
    const overflowed = this.overflowed;
    this.cur = '';
    this.overflowed = false;
    if (raw === '') return;
    if (overflowed) {
      out.push({ type: 'garbage', bytes: Buffer.from(raw, 'latin1'), reason: 'end of an overlong line' });
      return;
    }
    this.classify(raw, out);
  }

  private classify(raw: string, out: FrameEvent[]): void {
    const original = Buffer.from(raw, 'latin1');
    let bytes = original;
    if (bytes.includes(CTRL_Z) || bytes.includes(ESC))
      bytes = Buffer.from(bytes.filter((b) => b !== CTRL_Z && b !== ESC));
    const whole = decodeText(bytes);
    if (whole !== undefined) {
      this.emitLine(whole, out);
      return;
    }
    let start = 0;
    while (start < bytes.length && isNoiseByte(bytes[start] as number)) start++;
    let end = bytes.length;
    while (end > start && isNoiseByte(bytes[end - 1] as number)) end--;
    const middle = bytes.subarray(start, end);
    const text = start === 0 && end === bytes.length ? undefined : decodeText(middle);
    if (text === undefined || text.replace(TRIM, '') === '') {
      out.push({ type: 'garbage', bytes: original, reason: 'control or binary bytes where a text line was expected' });
      return;
    }
    if (start > 0)
      out.push({ type: 'garbage', bytes: Buffer.from(bytes.subarray(0, start)), reason: 'noise before a line' });
    this.emitLine(text, out);
    if (end < bytes.length)
      out.push({ type: 'garbage', bytes: Buffer.from(bytes.subarray(end)), reason: 'noise after a line' });
  }

  private emitLine(text: string, out: FrameEvent[]): void {
    const line = text.replace(TRIM, '');
    if (line === '') return;
    if (line === '>') {
      out.push({ type: 'prompt' });
      return;
    }
    if (this.echo !== undefined && line.toUpperCase() === this.echo) {
      this.echo = undefined;
      return;
    }
    out.push({ type: 'line', text: line });
  }
}
