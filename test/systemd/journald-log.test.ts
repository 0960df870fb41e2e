/**
 * Log lines under systemd carry their journald priority: `<N>` before the JSON (sd-daemon(3)), so
 * `journalctl -p warning` shows warnings and worse only. Outside systemd the lines stay plain JSON.
 * The detection is checked in a child process (the compiled logger writing to its real stdout, a pipe).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createLogger, runsUnderSystemd, syslogPriority } from '../../src/log.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Splits `<N>{json}` into the priority and the parsed record; priority undefined for a plain JSON line. */
function parse(line: string): { priority: number | undefined; record: Record<string, unknown> } {
  const m = /^<([0-7])>(.*)$/.exec(line);
  return { priority: m ? Number(m[1]) : undefined, record: JSON.parse(m ? m[2]! : line) as Record<string, unknown> };
}

function collect(): { sink: PassThrough; lines: () => string[] } {
  const sink = new PassThrough();
  let text = '';
  sink.on('data', (c: Buffer) => (text += c.toString('utf8')));
  return { sink, lines: () => text.split('\n').filter((l) => l !== '') };
}

describe('syslog priorities', () => {
  it('maps pino levels to syslog priorities', () => {
    expect([10, 20, 30, 40, 50, 60].map(syslogPriority)).toEqual([7, 7, 6, 4, 3, 2]);
    expect(syslogPriority(35)).toBe(6); // a custom level between info and warn counts as info
  });

  it('prefixes every line, child loggers too, and keeps the JSON and the redaction', () => {
    const { sink, lines } = collect();
    const log = createLogger({ level: 'trace', pretty: false, destination: sink, syslogPrefix: true });
    log.trace('t');
    log.debug('d');
    log.info('i');
    log.child({ modem: 'tsel-1' }).warn('w');
    log.error({ pin: '4821' }, 'e');
    log.fatal('f');
    const parsed = lines().map(parse);
    expect(parsed.map((p) => [p.priority, p.record.msg])).toEqual([
      [7, 't'],
      [7, 'd'],
      [6, 'i'],
      [4, 'w'],
      [3, 'e'],
      [2, 'f'],
    ]);
    expect(parsed[3]!.record.modem).toBe('tsel-1');
    expect(parsed[4]!.record.pin).toBe('[redacted]');
    // What `journalctl -p warning` keeps: priority 4 and below.
    expect(parsed.filter((p) => p.priority! <= 4).map((p) => p.record.msg)).toEqual(['w', 'e', 'f']);
  });

  it('an explicit destination (tests, --verbose on stderr) stays plain JSON by default', () => {
    const { sink, lines } = collect();
    createLogger({ pretty: false, destination: sink, env: { INVOCATION_ID: 'abc' } }).warn('w');
    expect(lines()[0]!.startsWith('{')).toBe(true);
  });

  it('detects systemd by JOURNAL_STREAM or INVOCATION_ID', () => {
    expect(runsUnderSystemd({ JOURNAL_STREAM: '8:12345' })).toBe(true);
    expect(runsUnderSystemd({ INVOCATION_ID: '0123456789abcdef0123456789abcdef' })).toBe(true);
    expect(runsUnderSystemd({})).toBe(false);
    expect(runsUnderSystemd({ JOURNAL_STREAM: '' })).toBe(false);
  });
});

describe('the daemon logger on stdout (compiled, own process)', () => {
  const script = `
    const { createLogger } = await import(${JSON.stringify(pathToFileURL(path.join(root, 'dist/src/log.js')).href)});
    const log = createLogger({ level: 'debug' });
    log.debug('d'); log.info('i'); log.warn('w'); log.error('e');
  `;
  function linesWith(env: NodeJS.ProcessEnv): string[] {
    const clean = { ...process.env };
    delete clean.JOURNAL_STREAM;
    delete clean.INVOCATION_ID;
    delete clean.LOG_LEVEL;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...clean, ...env },
    });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.split('\n').filter((l) => l !== '');
  }

  it('under systemd each line starts with its priority', () => {
    expect(
      existsSync(path.join(root, 'dist/src/log.js')),
      'dist/ is missing: run `npm run build` (npm test does)',
    ).toBe(true);
    for (const env of [{ JOURNAL_STREAM: '8:4242' }, { INVOCATION_ID: '0123456789abcdef0123456789abcdef' }]) {
      expect(linesWith(env).map((l) => [parse(l).priority, parse(l).record.msg])).toEqual([
        [7, 'd'],
        [6, 'i'],
        [4, 'w'],
        [3, 'e'],
      ]);
    }
  });

  it('elsewhere the lines are plain JSON', () => {
    const lines = linesWith({});
    expect(lines).toHaveLength(4);
    for (const l of lines) expect(parse(l).priority).toBeUndefined();
  });
});
