/**
 * The terminal form (pino-pretty, formatted in the logger's own process): time, level, message and the fields, coloured
 * by level only when the terminal has colours, error stacks below the line, redaction as in the JSON, and never a
 * control character raw.
 */
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';
import { prettyFormatter } from '../../src/log/pretty.js';

const flushed = (log: Logger) => new Promise((resolve) => log.flush(resolve));

function tty(colors: boolean): { sink: PassThrough; text: () => string } {
  const sink = Object.assign(new PassThrough(), { hasColors: () => colors });
  let text = '';
  sink.on('data', (c: Buffer) => (text += c.toString('utf8')));
  return { sink, text: () => text };
}

describe('pretty output', () => {
  it('shows time, level, message and the fields; leaves out pid, hostname, name; redacts', async () => {
    const { sink, text } = tty(false);
    const log = createLogger({ level: 'debug', pretty: true, destination: sink });
    log.child({ modem: 'tsel-1' }).warn({ attempt: 2, text: 'hello world', pin: '4821' }, 'retrying');
    await flushed(log);
    expect(text()).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: retrying \{"modem":"tsel-1","attempt":2,"text":"hello world","pin":"\[redacted\]"\}\n$/,
    );
    expect(text()).not.toMatch(/pulsa-bridge|hostname|pid/);
  });

  it('colours the level when the terminal has colours, and only then; never a syslog prefix', async () => {
    const coloured = tty(true);
    const a = createLogger({ level: 'info', pretty: true, destination: coloured.sink, syslogPrefix: true });
    a.error('boom');
    await flushed(a);
    expect(coloured.text()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] \x1b\[31mERROR\x1b\[39m:/);
    const plain = tty(false);
    const b = createLogger({ level: 'info', pretty: true, destination: plain.sink });
    b.error('boom');
    await flushed(b);
    expect(plain.text()).not.toContain('\x1b');
    expect(plain.text()).toMatch(/^\[[\d:.]+\] ERROR: boom\n$/);
  });

  it('an error shows its message (with causes) and its stack below the line', async () => {
    const { sink, text } = tty(false);
    const e = Object.assign(new Error('write failed', { cause: new Error('ENOSPC') }), { code: 'ENOSPC' });
    const log = createLogger({ level: 'info', pretty: true, destination: sink });
    log.error(e, 'spool');
    await flushed(log);
    const [first, ...rest] = text().trimEnd().split('\n');
    expect(first).toMatch(/ERROR: spool/);
    expect(rest.join('\n')).toContain('write failed: ENOSPC');
    expect(rest.join('\n')).toContain('caused by: Error: ENOSPC');
    expect(rest.join('\n')).toContain('"code": "ENOSPC"');
  });

  it('never writes a control character raw (a sender or a modem line could carry a terminal escape sequence)', async () => {
    for (const colors of [false, true]) {
      const record = {
        level: 30,
        time: 0,
        msg: 'a\x1b]0;pwn\x07b\nc\u009b2J',
        sender: '\x1b[2J',
        text: 'hi \u009b2J\u007f',
        'k\x1b[2J': 1,
        lines: ['ok', '\x1b[31mred', 'del\x7f'],
        err: { type: 'Error', message: 'x\x1b[1m\u009b', stack: 'Error: x\n    at \x1b[2Jhere\u0085' },
      };
      // the colours pino-pretty adds itself are SGR sequences (ESC [ digits m); anything else is from the record
      const out = (await prettyFormatter(colors))(`${JSON.stringify(record)}\n`).replace(/\x1b\[\d+(;\d+)*m/g, '');
      expect(out.slice(0, -1)).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/); // C0, DEL, C1: only line breaks remain
      expect(out).toContain('a\\u001b]0;pwn\\u0007b\\u000ac\\u009b2J'); // the message on one line
      expect(out).toContain('hi \\u009b2J\\u007f'); // in the fields
      expect(out).toContain('at \\u001b[2Jhere\\u0085'); // the stack keeps its line breaks, nothing else
      expect(out).not.toContain('\x1b[2J');
    }
  });

  it('shows every level name', async () => {
    const pretty = await prettyFormatter(false);
    expect(
      [10, 20, 30, 40, 50, 60].map(
        (level) => /\] (\w+):/.exec(pretty(JSON.stringify({ level, time: 0, msg: 'm' })))?.[1],
      ),
    ).toEqual(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']);
  });
});
