/**
 * status.json, the running daemon's report for `pulsa-bridge status`: the snapshot plus pid and writtenAt, written
 * atomically (mode 0640) at start, every STATUS_INTERVAL_MS and on writeSoon(); writes never overlap. A failed write
 * is logged, never thrown (the reader sees it stale). The timer is deliberately not unref'd (it keeps a daemon with
 * only virtual modems alive). stop() resolves after a write in flight, so removing the file afterwards is final.
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

export const STATUS_INTERVAL_MS = 5_000;

export function statusFilePath(spoolDir: string): string {
  return join(spoolDir, 'status.json');
}

/** The last report of `pulsa-bridge test-transfer`, written by the CLI beside status.json for the status page. */
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
      const body = JSON.stringify(
        { ...(await this.o.snapshot()), pid: process.pid, writtenAt: new Date().toISOString() },
        null,
        2,
      );
      await writeFile(`${file}.tmp`, body, { mode: 0o640 });
      await rename(`${file}.tmp`, file);
    } catch (err) {
      this.o.logger.warn({ err }, `could not write ${file}: ${errorMessage(err)} (pulsa-bridge status will be stale)`);
    }
  }
}
