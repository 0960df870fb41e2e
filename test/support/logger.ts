/**
 * captureLogger(): the daemon's real logger (createLogger, JSON lines) writing into an array a test can read.
 * Contract: every line written is parsed and kept in order; nothing goes to stdout.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A real logger (createLogger, the JSON lines the daemon writes) writing into an array. */
export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { logger: createLogger({ level: 'debug', pretty: false, destination }), lines };
}
