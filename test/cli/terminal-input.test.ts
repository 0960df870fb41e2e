/**
 * The interactive AT terminal's input handling, on fake ModemOps: lines typed (or piped) before the terminal is up
 * are answered, and answers still queued when the input ends are printed without an error (Node 24's readline
 * throws on a prompt after close; the suite runs on Node 20, 22 and 24).
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../src/cli.js';
import { interactiveAt, type TerminalOps } from '../../src/cli/terminal.js';
import type { AtOutcome } from '../../src/ops/modem-ops.js';
import type { EventMessage } from '../../src/control/protocol.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function fakeOps(o: { subscribeMs: number; answerMs: number }) {
  const sent: string[] = [];
  let emit: ((e: EventMessage) => void) | undefined;
  const ops: TerminalOps = {
    at: async (line: string): Promise<AtOutcome> => {
      sent.push(line);
      await sleep(o.answerMs);
      return { command: line, lines: [`answer to ${line}`], urcs: [], final: 'OK', ok: true };
    },
    onEvent: async (handler) => {
      await sleep(o.subscribeMs); // a round trip to the daemon before the subscription is confirmed
      emit = handler;
      return () => (emit = undefined);
    },
  };
  return { ops, sent, emit: (e: EventMessage) => emit?.(e) };
}

/** Piped input for the terminal and everything it prints. */
function capture() {
  let out = '';
  const input = new PassThrough();
  const io: Io = { out: (t) => void (out += t), err: (t) => void (out += t), input };
  return { io, input, out: () => out };
}

describe('interactive AT terminal input', () => {
  it('answers lines that were piped in while the event subscription was still being set up', async () => {
    const f = fakeOps({ subscribeMs: 50, answerMs: 0 });
    const c = capture();
    c.input.write('AT+CSQ\n');
    const done = interactiveAt(f.ops, c.io);
    await sleep(10);
    c.input.end('ATI\n');
    await done;
    expect(f.sent).toEqual(['AT+CSQ', 'ATI']);
    expect(c.out()).toContain('answer to AT+CSQ\nOK\nanswer to ATI\nOK\n');
  });

  it('prints answers that arrive after the input ended, in order, and returns', async () => {
    const f = fakeOps({ subscribeMs: 0, answerMs: 30 });
    const c = capture();
    const done = interactiveAt(f.ops, c.io);
    c.input.end('AT+CSQ\nATI\nAT+CREG?\n');
    await done;
    expect(f.sent).toEqual(['AT+CSQ', 'ATI', 'AT+CREG?']);
    expect(c.out()).toMatch(/answer to AT\+CSQ\nOK\nanswer to ATI\nOK\nanswer to AT\+CREG\?\nOK\n$/);
  });

  it('returns when the daemon says it is closing before the terminal is up', async () => {
    const ops: TerminalOps = {
      at: () => Promise.reject(new Error('no command may be sent: the daemon is closing')),
      onEvent: async (handler) => {
        handler({ event: 'closing' } as EventMessage); // delivered while the subscription is being confirmed
        return () => undefined;
      },
    };
    const c = capture();
    c.input.write('AT+CSQ\n'); // input stays open: only the closing event can end the terminal
    await interactiveAt(ops, c.io);
    expect(c.out()).toContain('[daemon] closing: the terminal ends');
  });

  it('ends when the daemon says it is closing', async () => {
    const f = fakeOps({ subscribeMs: 0, answerMs: 0 });
    const c = capture();
    const done = interactiveAt(f.ops, c.io);
    await sleep(10);
    f.emit({ event: 'closing' } as EventMessage);
    await done;
    expect(c.out()).toContain('[daemon] closing: the terminal ends');
  });
});
