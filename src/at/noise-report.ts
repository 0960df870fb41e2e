/**
 * NoiseReport: framer garbage from one modem, logged without flooding the journal. The first chunk is logged at once
 * (warn); later chunks are counted and summed up in one warn line per interval: chunks, bytes, the reasons and an
 * escaped sample (printable ASCII as is, every other byte as \xNN, at most SAMPLE_BYTES). A quiet interval logs
 * nothing and the next chunk is logged at once again. The timer is unref'd; stop() reports what is left and ends it.
 */
import type { Logger } from '../log.js';

const SAMPLE_BYTES = 48;

/** Bytes as a terminal-safe string: printable ASCII kept, everything else \xNN. PURE. */
export function escapeBytes(bytes: Uint8Array, max = SAMPLE_BYTES): string {
  let out = '';
  const n = Math.min(bytes.length, max);
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return bytes.length > max ? `${out}...` : out;
}

export class NoiseReport {
  private readonly log: Logger;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private chunks = 0;
  private bytes = 0;
  private readonly reasons = new Set<string>();
  private sample = '';

  constructor(options: { log: Logger; intervalMs: number }) {
    this.log = options.log;
    this.intervalMs = options.intervalMs;
  }

  note(bytes: Buffer, reason: string): void {
    if (!this.timer) {
      // First chunk after a quiet interval: said at once, then summed up for the interval.
      this.log.warn(
        { length: bytes.length, sample: escapeBytes(bytes) },
        `skipped ${bytes.length} garbage bytes from the modem: ${reason} (more in the next ${Math.round(this.intervalMs / 1000)} s are summed up in one line)`,
      );
      this.timer = setTimeout(() => this.flush(), this.intervalMs);
      this.timer.unref();
      return;
    }
    this.chunks++;
    this.bytes += bytes.length;
    if (this.reasons.size < 5) this.reasons.add(reason);
    if (this.sample === '') this.sample = escapeBytes(bytes);
  }

  /** Reports what was counted and ends the interval. */
  stop(): void {
    this.flush();
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.chunks === 0) return;
    this.log.warn(
      { chunks: this.chunks, bytes: this.bytes, reasons: [...this.reasons], sample: this.sample },
      `skipped ${this.chunks} more garbage chunk(s), ${this.bytes} bytes, from the modem in the last ${Math.round(this.intervalMs / 1000)} s (${[...this.reasons].join('; ')}); first: '${this.sample}'`,
    );
    this.chunks = 0;
    this.bytes = 0;
    this.reasons.clear();
    this.sample = '';
  }
}
