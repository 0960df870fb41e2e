/**
 * `pulsa-bridge at` as an operator uses it, in-process on the virtual modem (--simulate): the line is sent as typed
 * and nothing else, every answer line of a multi-command line is shown, the terminal handles `> ` prompts and lines
 * without AT.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Io } from '../../src/cli.js';
import { runSessionCli } from './session-ops.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { encodeSubmit } from '../../src/sms/submit.js';
import type { TestIo } from '../support/cli.js';

function capture(extra: Partial<Io> = {}) {
  let out = '';
  let err = '';
  let vm: VirtualModem | undefined;
  const io: TestIo = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    virtualModem: (path) => {
      vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, noise: false });
      vm.start();
      return vm;
    },
    ...extra,
  };
  return { io, result: () => ({ out, err, code: Number(process.exitCode ?? 0) }), vm: () => vm! };
}

beforeEach(() => {
  process.exitCode = undefined;
});
afterEach(() => {
  process.exitCode = undefined;
});

describe('at, one line', () => {
  it('sends the line as typed and nothing else (no set-up commands), and shows every answer of a multi-command line', async () => {
    const c = capture();
    await runSessionCli(['at', '--simulate', 'AT+CSQ;+CREG?'], c.io);
    expect(c.result()).toEqual({ out: '+CSQ: 20,99\n+CREG: 0,1\nOK\n', err: '', code: 0 });
    // The session's probe `AT`, then the operator's line: no AT+CPMS=, AT+CNMI=, ...
    expect(c.vm().commandLog()).toEqual(['AT', 'AT+CSQ;+CREG?']);
  });

  it('a line that is not an AT command is a usage error with a suggestion, and nothing is opened', async () => {
    const c = capture();
    await runSessionCli(['at', '--simulate', 'CSQ'], c.io);
    expect(c.result().err).toMatch(
      /^error: not an AT command: "CSQ" does not start with AT; did you mean "AT\+CSQ"\?\n/,
    );
    expect(c.result().code).toBe(2);
  });
});

describe('at, the interactive terminal', () => {
  it('sends a line without AT with AT in front and says so; multi-line answers shown whole', async () => {
    const input = new PassThrough();
    const c = capture({ input });
    const done = runSessionCli(['at', '--simulate'], c.io);
    input.end('CSQ\nAT+CSQ;+CREG?\n');
    await done;
    const out = c.result().out;
    expect(out).toContain('note: "CSQ" does not start with AT: sent as AT+CSQ\n+CSQ: 20,99\nOK\n');
    expect(out).toContain('+CSQ: 20,99\n+CREG: 0,1\nOK\n');
    expect(c.vm().commandLog()).toEqual(['AT', 'AT+CSQ', 'AT+CSQ;+CREG?']);
  });

  it('AT+CMGS: shows the > prompt, sends the typed PDU on Ctrl-Z and prints +CMGS', async () => {
    const input = new PassThrough();
    const c = capture({ input });
    const done = runSessionCli(['at', '--simulate'], c.io);
    const [part] = encodeSubmit('+6281234567890', 'halo');
    input.write(`AT+CMGS=${part!.tpduLength}\n`);
    await vi.waitFor(() => expect(c.result().out).toContain('> \n'));
    input.end(`${part!.pdu}\x1a\n`);
    await done;
    expect(c.result().out).toMatch(/> \n\+CMGS: \d+\nOK\n/);
    expect(
      c
        .vm()
        .sentMessages()
        .map((m) => [m.destination, m.text]),
    ).toEqual([['+6281234567890', 'halo']]);
  });

  it('AT+CMGS: Esc cancels, nothing is sent and the terminal goes on', async () => {
    const input = new PassThrough();
    const c = capture({ input });
    const done = runSessionCli(['at', '--simulate'], c.io);
    input.end('AT+CMGS=20\n0011\x1b\nAT+CSQ\n');
    await done;
    expect(c.result().out).toContain('(cancelled: Esc sent, nothing was sent as a message)');
    expect(c.result().out).toContain('+CSQ: 20,99\nOK\n');
    expect(c.vm().sentMessages()).toEqual([]);
  });

  it('a message left without Ctrl-Z at end of input is not sent', async () => {
    const input = new PassThrough();
    const c = capture({ input });
    const done = runSessionCli(['at', '--simulate'], c.io);
    input.end('AT+CMGS=20\n0011\n');
    await done;
    expect(c.result().out).toContain('(message not sent: input ended before Ctrl-Z)');
    expect(c.vm().commandLog()).toEqual(['AT']);
  });
});

describe('the terminal: events through the daemon', () => {
  it('URCs whole, a spooled SMS in one line, a delivery only when it ended', async () => {
    const { formatEvent } = await import('../../src/cli/terminal.js');
    expect(formatEvent({ v: 1, event: 'urc', data: { name: 'cmti', lines: ['+CMTI: "SM",1'], data: {} } })).toBe(
      '\n[urc] +CMTI: "SM",1\n',
    );
    expect(formatEvent({ v: 1, event: 'sms', data: { id: 'sms-1', sender: '858', text: 'x' } })).toBe(
      '\n[sms] spooled sms-1 from 858\n',
    );
    expect(
      formatEvent({ v: 1, event: 'delivery', data: { id: 'sms-1', status: 'retry', outcome: 'ECONNREFUSED' } }),
    ).toBeUndefined();
    expect(formatEvent({ v: 1, event: 'delivery', data: { id: 'sms-1', status: 'delivered', outcome: '200' } })).toBe(
      '\n[delivery] sms-1: delivered (200)\n',
    );
  });
});
