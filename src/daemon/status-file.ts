/**
 * status.json, the running daemon's report for `pulsa-bridge status` (I/O: one file in the spool directory).
 *
 * Contract
 * - start() writes it at once and then every STATUS_INTERVAL_MS; writeSoon() asks for a write now (a modem changed
 *   state, a balance check ended). Writes never overlap: one asked for during a write follows it. Each write is
 *   atomic (tmp file + rename), mode 0640 (the spool is not for other users: webhook URL, counts).
 * - The body is `snapshot()` plus `pid` and `writtenAt`. A failed write is logged as a warning (the status goes stale;
 *   `pulsa-bridge status` says so from writtenAt) and never thrown.
 * - The interval timer is deliberately not unref'd: it keeps the process alive while the daemon runs, even when no
 *   serial port handle does (virtual modems). stop() clears it, refuses later writes and resolves once a write in
 *   flight has ended, so the daemon's removal of the file afterwards is final (no stale status.json after a stop).
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export const STATUS_INTERVAL_MS = 5_000;

export function statusFilePath(spoolDir: string): string {
  return join(spoolDir, 'status.json');
}

/** The last report of `pulsa-bridge transfer test`, written by the CLI beside status.json for the status page. */
export function transferReportPath(spoolDir: string): string {
  return join(spoolDir, 'transfer-last.json');
}

export interface StatusFileOptions {
  file: string;
  logger: Logger;
  /** What the daemon reports about itself now. */
  snapshot: () => Promise<object>;
  intervalMs?: number;
}

export class StatusFile {
  private writing: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: StatusFileOptions) {}

  start(): void {
    this.writeSoon();
    this.timer = setInterval(() => this.writeSoon(), this.o.intervalMs ?? STATUS_INTERVAL_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.writing;
  }

  writeSoon(): void {
    if (this.stopped) return;
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = this.write().then(() => {
      this.writing = undefined;
      if (!this.again) return;
      this.again = false;
      this.writeSoon();
    });
  }

  private async write(): Promise<void> {
    const { file } = this.o;
    try {
      const body = JSON.stringify({ ...(await this.o.snapshot()), pid: process.pid, writtenAt: new Date().toISOString() }, null, 2);
      await writeFile(`${file}.tmp`, body, { mode: 0o640 });
      await rename(`${file}.tmp`, file);
    } catch (err) {
      this.o.logger.warn({ err }, `could not write ${file}: ${errorMessage(err)} (pulsa-bridge status will be stale)`);
    }
  }
}
