/**
 * The terminal form: `HH:MM:ss.mmm LEVEL msg key=value ...`, coloured by level when the terminal has colours, error
 * stacks on indented lines below, redaction as in the JSON; no worker thread (the logger writes it itself).
 */
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { formatPretty } from '../../src/log/pretty.js';
import { localClock } from '../../src/time-format.js';

function tty(colors: boolean): { sink: PassThrough; text: () => string } {
  const sink = Object.assign(new PassThrough(), { hasColors: () => colors });
  let text = '';
  sink.on('data', (c: Buffer) => (text += c.toString('utf8')));
  return { sink, text: () => text };
}

describe('pretty output', () => {
  it('shows time, level, message and the fields; leaves out pid, hostname, name; redacts', () => {
    const { sink, text } = tty(false);
    const log = createLogger({ level: 'debug', pretty: true, destination: sink });
    log.child({ modem: 'tsel-1' }).warn({ attempt: 2, text: 'hello world', pin: '4821' }, 'retrying');
    expect(text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN  retrying modem=tsel-1 attempt=2 text="hello world" pin=\[redacted\]\n$/);
  });

  it('colours the level when the terminal has colours, and only then; never a syslog prefix', () => {
    const coloured = tty(true);
    createLogger({ level: 'info', pretty: true, destination: coloured.sink, syslogPrefix: true }).error('boom');
    expect(coloured.text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} \x1b\[31mERROR\x1b\[39m boom\n$/);
    const plain = tty(false);
    createLogger({ level: 'info', pretty: true, destination: plain.sink }).error('boom');
    expect(plain.text()).not.toContain('\x1b');
  });

  it('an error shows its message (with causes) and props on the line, its stack indented below', () => {
    const { sink, text } = tty(false);
    const e = Object.assign(new Error('write failed', { cause: new Error('ENOSPC') }), { code: 'ENOSPC' });
    createLogger({ level: 'info', pretty: true, destination: sink }).error(e, 'spool');
    const [first, ...rest] = text().trimEnd().split('\n');
    expect(first).toMatch(/ERROR spool err="write failed: ENOSPC" err.code=ENOSPC$/);
    expect(rest[0]).toBe('    Error: write failed');
    expect(rest.some((l) => l.startsWith('    caused by: Error: ENOSPC'))).toBe(true);
    expect(rest.every((l) => l.startsWith('    '))).toBe(true);
  });

  it('never writes a control character raw (a sender or a modem line could carry a terminal escape sequence)', () => {
    const out = formatPretty(
      {
        level: 30,
        time: 0,
        msg: 'a\x1b]0;pwn\x07b\nc\u009b2J',
        sender: '\x1b[2J',
        text: 'hi \u009b2J\u007f',
        'k\x1b[2J': 1,
        lines: ['ok', '\x1b[31mred', 'del\x7f'],
        err: { type: 'Error', message: 'x\x1b[1m\u009b', stack: 'Error: x\n    at \x1b[2Jhere\u0085' } },
      false,
    );
    expect(out.slice(0, -1)).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/); // C0, DEL, C1: only the stack's own line breaks remain
    expect(out).toContain('text="hi \\u009b2J\\u007f"');
    expect(out).toContain('a\\u001b]0;pwn\\u0007b\\u000ac');
    expect(out).toContain('sender="\\u001b[2J"');
  });

  it('formats local time as HH:MM:ss.mmm and every level name', () => {
    const t = new Date(2026, 0, 2, 3, 4, 5, 6).getTime();
    expect(localClock(t, true)).toBe('03:04:05.006');
    expect([10, 20, 30, 40, 50, 60].map((level) => formatPretty({ level, time: t, msg: 'm' }, false))).toEqual(
      ['TRACE', 'DEBUG', 'INFO ', 'WARN ', 'ERROR', 'FATAL'].map((n) => `03:04:05.006 ${n} m\n`),
    );
  });
});
