import { describe, it, expect, afterEach, vi } from 'vitest';
import { SerialAtChannel, isPortClosedError } from '../../src/at/channel.js';
import type { AtResponse, Urc, UrcEntry } from '../../src/at/types.js';
import { AtCommandError, PortError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import type { SerialLink } from '../../src/serial/link.js';
import { openVirtualLink, registerVirtualDevice } from '../../src/virtual-modem/virtual-link.js';
import { ScriptedDevice, answer, type Handler } from './scripted-device.js';

const PDU = '07912658050000F0040B912618485400F900004130228180238205C8329BFD06';

/** A small URC table of our own (the real one lives in src/modem). */
const URCS: UrcEntry[] = [
  {
    name: 'cmti',
    pattern: /^\+CMTI:\s*"(\w+)",(\d+)/,
    parse: (l) => ({ storage: /"(\w+)"/.exec(l[0] ?? '')?.[1], index: Number(/,(\d+)/.exec(l[0] ?? '')?.[1]) }),
  },
  { name: 'cmt', pattern: /^\+CMT:/, extraLines: 1, parse: (l) => ({ pdu: l[1] }) },
  {
    name: 'cusd',
    pattern: /^\+CUSD:\s*\d/,
    responseTo: ['AT+CUSD?'],
    // complete when the quotes are balanced (the text may hold CR LF)
    isComplete: (l) => (l.join('\n').match(/"/g) ?? []).length % 2 === 0,
  },
  { name: 'cpin', pattern: /^\+CPIN:/, responseTo: ['AT+CPIN'] },
  { name: 'ring', pattern: /^RING$/ },
];

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  vi.useRealTimers();
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(handler: Handler, options: { echo?: boolean; timeoutMs?: number } = {}) {
  const path = `virtual:mock-at-${process.pid}-${++counter}`;
  const device = new ScriptedDevice(handler, { echo: options.echo ?? false });
  const unregister = registerVirtualDevice(path, device);
  const link: SerialLink = await openVirtualLink(path);
  const channel = new SerialAtChannel({
    link,
    logger: silentLogger(),
    defaultTimeoutMs: options.timeoutMs ?? 2000,
    urcs: URCS,
    quietGapMs: 200,
    maxDrainMs: 1000,
  });
  const urcs: Urc[] = [];
  const unexpected: string[] = [];
  const garbage: Array<{ bytes: Buffer; reason: string }> = [];
  channel.on('urc', (u) => urcs.push(u));
  channel.on('unexpected', (l) => unexpected.push(l));
  channel.on('garbage', (bytes, reason) => garbage.push({ bytes, reason }));
  cleanups.push(async () => {
    await channel.close().catch(() => undefined);
    unregister();
  });
  return { device, link, channel, urcs, unexpected, garbage };
}

/** Standard answers of a healthy modem. */
const basic: Handler = (input, dev) => {
  if (input.kind !== 'command') return undefined;
  const cmd = input.text.toUpperCase();
  if (cmd === 'AT') return answer('OK');
  if (cmd === 'ATE0') {
    dev.echo = false;
    return answer('OK');
  }
  if (cmd === 'AT+CSQ') return answer('+CSQ: 21,99', 'OK');
  if (cmd === 'AT+CMGF=1') return answer('ERROR');
  if (cmd === 'AT+CPIN?') return answer('+CPIN: READY', 'OK');
  if (cmd === 'AT+CMGR=5') return answer('+CMS ERROR: 321');
  if (cmd === 'AT+CMGR=6') return answer('+CME ERROR: SIM not inserted');
  if (cmd === 'AT+CMGD=1') return answer('+CME ERROR: 10');
  if (cmd === 'AT^CURC=0') return answer('COMMAND NOT SUPPORT');
  if (cmd.startsWith('AT+CPIN=')) return answer('+CME ERROR: 16');
  return answer('ERROR');
};

async function rejection(p: Promise<unknown>): Promise<AtCommandError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AtCommandError);
  return err as AtCommandError;
}

describe('SerialAtChannel: commands and final results', () => {
  it('runs a plain command and returns its information lines', async () => {
    const { channel } = await setup(basic);
    await expect(channel.run('AT')).resolves.toEqual({ command: 'AT', lines: [], final: 'OK' });
    await expect(channel.run('AT+CSQ')).resolves.toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
    expect(channel.isOpen).toBe(true);
  });

  it('ERROR rejects with the command named', async () => {
    const { channel } = await setup(basic);
    const err = await rejection(channel.run('AT+CMGF=1'));
    expect(err.code).toBe('AT_ERROR');
    expect(err.message).toBe('AT+CMGF=1 failed: ERROR');
    expect(err.final).toBe('ERROR');
    expect(err.errorCode).toBeUndefined();
  });

  it('+CMS ERROR keeps the modem words and explains the code', async () => {
    const { channel } = await setup(basic);
    const err = await rejection(channel.run('AT+CMGR=5'));
    expect(err.message).toBe('AT+CMGR=5 failed: +CMS ERROR: 321 (invalid memory index)');
    expect(err.errorCode).toBe(321);
    expect(err.final).toBe('+CMS ERROR: 321');
    expect(err.lines).toEqual([]);
  });

  it('+CME ERROR in numeric and verbose forms both give the code', async () => {
    const { channel } = await setup(basic);
    const numeric = await rejection(channel.run('AT+CMGD=1'));
    expect(numeric.message).toBe('AT+CMGD=1 failed: +CME ERROR: 10 (SIM not inserted)');
    expect(numeric.errorCode).toBe(10);
    const verbose = await rejection(channel.run('AT+CMGR=6'));
    expect(verbose.message).toBe('AT+CMGR=6 failed: +CME ERROR: SIM not inserted');
    expect(verbose.errorCode).toBe(10);
  });

  it('COMMAND NOT SUPPORT is a final error, and a profile can add its own final results', async () => {
    const { channel } = await setup((input) =>
      input.kind === 'command' && input.text === 'AT+XYZ'
        ? answer('+XYZ: 1', 'ABORTED')
        : basic(input, undefined as never),
    );
    const err = await rejection(channel.run('AT^CURC=0'));
    expect(err.final).toBe('COMMAND NOT SUPPORT');
    channel.addFinalResults([{ pattern: /^ABORTED$/, ok: false }]);
    const aborted = await rejection(channel.run('AT+XYZ'));
    expect(aborted.message).toBe('AT+XYZ failed: ABORTED');
    expect(aborted.lines).toEqual(['+XYZ: 1']);
  });

  it('refuses commands with CR, LF or control characters without writing anything', async () => {
    const { channel, device } = await setup(basic);
    for (const bad of ['AT\r', 'AT+CMGS=1\nX', '', 'AT\x1a']) {
      const err = await rejection(channel.run(bad));
      expect(err.message).toMatch(/printable ASCII/);
    }
    await rejection(channel.runWithPrompt('AT+CMGS=5', 'AB\x1aCD'));
    expect(device.received).toEqual([]);
  });

  it('hides a PIN in errors and in the transcript', async () => {
    const { channel } = await setup(basic);
    const err = await rejection(channel.run('AT+CPIN="1234"'));
    expect(err.message).toBe('AT+CPIN=[redacted] failed: +CME ERROR: 16 (incorrect password)');
    expect(JSON.stringify(channel.transcript())).not.toContain('1234');
    expect(channel.transcript().map((t) => `${t.dir} ${t.text}`)).toEqual([
      'out AT+CPIN=[redacted]',
      'in +CME ERROR: 16',
    ]);
  });
});

describe('SerialAtChannel: queueing and timeouts', () => {
  it('keeps one command in flight and answers in FIFO order', async () => {
    let outstanding = false;
    let overlap = false;
    const { channel, device } = await setup((input, dev) => {
      if (input.kind !== 'command') return undefined;
      if (outstanding) overlap = true;
      outstanding = true;
      void dev.send(`\r\n+ECHO: ${input.text}\r\n`).then(async () => {
        outstanding = false;
        await dev.send('\r\nOK\r\n');
      });
      return undefined;
    });
    const results = await Promise.all(['AT+A', 'AT+B', 'AT+C', 'AT+D'].map((c) => channel.run(c)));
    expect(results.map((r) => r.lines)).toEqual([['+ECHO: AT+A'], ['+ECHO: AT+B'], ['+ECHO: AT+C'], ['+ECHO: AT+D']]);
    expect(device.received.map((i) => i.text)).toEqual(['AT+A', 'AT+B', 'AT+C', 'AT+D']);
    expect(overlap).toBe(false);
  });

  it('times out naming the command, keeps the lines, then recovers without handing the late answer to the next command', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel, device, unexpected } = await setup((input) => {
      if (input.kind !== 'command') return undefined;
      if (input.text === 'AT+COPS=?') return answer('+COPS: (2,"TELKOMSEL","TSEL","51010")'); // OK comes late
      return basic(input, undefined as never);
    });
    const slow = channel.run('AT+COPS=?', { timeoutMs: 1000 });
    const next = channel.run('AT+CSQ');
    const slowErr = rejection(slow);
    await vi.advanceTimersByTimeAsync(999);
    expect(device.received.map((i) => i.text)).toEqual(['AT+COPS=?']);
    await vi.advanceTimersByTimeAsync(1);
    const err = await slowErr;
    expect(err.code).toBe('AT_TIMEOUT');
    expect(err.message).toBe('AT+COPS=?: no answer within 1000 ms');
    expect(err.lines).toEqual(['+COPS: (2,"TELKOMSEL","TSEL","51010")']);
    // the late OK arrives while the channel waits for silence: reported, not given to AT+CSQ
    await device.send('\r\nOK\r\n');
    expect(unexpected).toEqual(['OK']);
    expect(device.received.map((i) => i.text)).toEqual(['AT+COPS=?']);
    await vi.advanceTimersByTimeAsync(200);
    await expect(next).resolves.toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
  });

  it('idleTimeoutMs: a listing whose lines keep coming runs past it; one that goes silent ends after it, not after timeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel, device } = await setup(
      (input) => (input.kind === 'command' && input.text === 'AT+CMGL=4' ? answer('+CMGL: 1,0,,23') : undefined),
      { timeoutMs: 1000 },
    );
    // Lines every 900 ms (each within the 1500 ms idle bound), 4 s in all, then OK: the answer is whole.
    const streaming = channel.run('AT+CMGL=4', { timeoutMs: 60_000, idleTimeoutMs: 1500 });
    for (let i = 0; i < 4; i++) {
      await vi.advanceTimersByTimeAsync(900);
      await device.send('\r\n0791261101\r\n');
    }
    await device.send('\r\nOK\r\n');
    await expect(streaming).resolves.toMatchObject({ final: 'OK' });
    expect((await streaming).lines).toHaveLength(5);
    // One line, then silence: AT_TIMEOUT after the idle bound, long before the 60 s bound.
    await vi.advanceTimersByTimeAsync(300); // the channel's quiet gap
    let settled = false;
    const silent = rejection(channel.run('AT+CMGL=4', { timeoutMs: 60_000, idleTimeoutMs: 1500 })).finally(
      () => (settled = true),
    );
    for (let t = 0; t < 5000 && !settled; t += 250) await vi.advanceTimersByTimeAsync(250); // 5 s of the 60 s bound
    expect(settled).toBe(true);
    const err = await silent;
    expect(err.code).toBe('AT_TIMEOUT');
    expect(err.message).toBe('AT+CMGL=4: no line of the answer for 1500 ms (1 line(s) read)');
  });

  it('idleTimeoutMs is never shorter than the channel default', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel } = await setup(() => undefined, { timeoutMs: 3000 });
    const p = rejection(channel.run('AT+CMGL=4', { timeoutMs: 60_000, idleTimeoutMs: 100 }));
    await vi.advanceTimersByTimeAsync(2999);
    await vi.advanceTimersByTimeAsync(1);
    expect((await p).message).toBe('AT+CMGL=4: no line of the answer for 3000 ms (0 line(s) read)');
  });

  it('uses the default timeout when run() gets none', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel } = await setup(() => undefined, { timeoutMs: 3000 });
    const p = rejection(channel.run('AT+CSQ'));
    await vi.advanceTimersByTimeAsync(3000);
    expect((await p).message).toBe('AT+CSQ: no answer within 3000 ms');
  });
});

describe('SerialAtChannel: URCs', () => {
  it('splits a URC out of a response between intermediate lines and the final OK', async () => {
    const { channel, urcs } = await setup((input) =>
      input.kind === 'command' && input.text === 'AT+CMGL=4'
        ? [
            '\r\n+CMGL: 1,0,,39\r\n',
            `${PDU}\r\n`,
            '\r\n+CMTI: "SM",5\r\n',
            `\r\n+CMGL: 2,1,,39\r\n${PDU}\r\n`,
            '\r\nOK\r\n',
          ]
        : undefined,
    );
    const res = await channel.run('AT+CMGL=4');
    expect(res.lines).toEqual(['+CMGL: 1,0,,39', PDU, '+CMGL: 2,1,,39', PDU]);
    expect(urcs).toEqual([{ name: 'cmti', lines: ['+CMTI: "SM",5'], data: { storage: 'SM', index: 5 } }]);
  });

  it('collects a two-line +CMT split across chunks, idle and with a command in flight', async () => {
    const { channel, device, link, urcs } = await setup((input) =>
      input.kind === 'command' && input.text === 'AT+CSQ'
        ? ['\r\n+CSQ: 21,99\r\n', '\r\n+CMT: ,3', `9\r\n${PDU.slice(0, 20)}`, `${PDU.slice(20)}\r\n\r\nOK\r\n`]
        : undefined,
    );
    let chunks = 0;
    link.on('data', () => chunks++);
    await device.send('\r\n+CMT: ,39\r\n', PDU.slice(0, 30), `${PDU.slice(30)}\r\n`);
    expect(chunks).toBe(3);
    expect(urcs).toEqual([{ name: 'cmt', lines: ['+CMT: ,39', PDU], data: { pdu: PDU } }]);
    const res = await channel.run('AT+CSQ');
    expect(res.lines).toEqual(['+CSQ: 21,99']);
    expect(urcs[1]).toEqual({ name: 'cmt', lines: ['+CMT: ,39', PDU], data: { pdu: PDU } });
  });

  it('emits +CUSD that arrives before the OK of AT+CUSD as a URC, including text with embedded CR LF', async () => {
    const { channel, urcs } = await setup((input) =>
      input.kind === 'command' && input.text.startsWith('AT+CUSD=1')
        ? ['\r\n+CUSD: 1,"Sisa pulsa Rp.24025.\r\n', 'Aktif sd 28/08/2016.\r\n1.Info Kartu",15\r\n', '\r\nOK\r\n']
        : undefined,
    );
    let urcsAtResolve = -1;
    const res = await channel.run('AT+CUSD=1,"*888#",15').then((r: AtResponse) => {
      urcsAtResolve = urcs.length;
      return r;
    });
    expect(res).toEqual({ command: 'AT+CUSD=1,"*888#",15', lines: [], final: 'OK' });
    expect(urcsAtResolve).toBe(1);
    expect(urcs[0]?.lines).toEqual(['+CUSD: 1,"Sisa pulsa Rp.24025.', 'Aktif sd 28/08/2016.', '1.Info Kartu",15']);
  });

  it('a row with responseTo answers its command but is a URC otherwise', async () => {
    const { channel, device, urcs } = await setup(basic);
    await expect(channel.run('AT+CPIN?')).resolves.toMatchObject({ lines: ['+CPIN: READY'] });
    expect(urcs).toEqual([]);
    await device.send('\r\n+CPIN: READY\r\n');
    expect(urcs.map((u) => u.name)).toEqual(['cpin']);
  });

  it('reports lines with no command in flight and no URC row as unexpected', async () => {
    const { device, unexpected, urcs } = await setup(basic);
    await device.send('\r\nSTRANGE THING\r\n', '\r\nRING\r\n');
    expect(unexpected).toEqual(['STRANGE THING']);
    expect(urcs.map((u) => u.name)).toEqual(['ring']);
  });

  it('a final result cuts an unfinished multi-line URC short and still ends the command', async () => {
    const { channel, urcs } = await setup((input) =>
      input.kind === 'command' ? ['\r\n+CMT: ,39\r\n', '\r\nOK\r\n'] : undefined,
    );
    await expect(channel.run('AT+CNMI=2,2,0,0,0')).resolves.toMatchObject({ lines: [], final: 'OK' });
    expect(urcs).toEqual([{ name: 'cmt', lines: ['+CMT: ,39'], data: { pdu: undefined } }]);
  });

  it('a URC parser that throws yields the URC with parseError, not a crash', async () => {
    const { channel, device, urcs } = await setup(basic);
    channel.setUrcTable([
      {
        name: 'bad',
        pattern: /^\+BAD:/,
        parse: () => {
          throw new Error('cannot parse');
        },
      },
    ]);
    await device.send('\r\n+BAD: 1\r\n');
    expect(urcs).toEqual([{ name: 'bad', lines: ['+BAD: 1'], data: { parseError: 'cannot parse' } }]);
    await expect(channel.run('AT')).resolves.toMatchObject({ final: 'OK' });
  });

  it('a listener that throws does not break the channel', async () => {
    const { channel, device } = await setup(basic);
    channel.on('urc', () => {
      throw new Error('listener bug');
    });
    await device.send('\r\nRING\r\n');
    await expect(channel.run('AT')).resolves.toMatchObject({ final: 'OK' });
  });
});

describe('SerialAtChannel: echo', () => {
  it('removes the echo when echo is on, and ATE0 (itself echoed) turns it off', async () => {
    const { channel, device } = await setup(basic, { echo: true });
    await expect(channel.run('AT+CSQ')).resolves.toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
    await expect(channel.run('ATE0')).resolves.toEqual({ command: 'ATE0', lines: [], final: 'OK' });
    expect(device.echo).toBe(false);
    await expect(channel.run('AT+CSQ')).resolves.toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
  });
});

describe('SerialAtChannel: prompt (AT+CMGS)', () => {
  const pdu = '0001000B915121551532F40000';
  const cmgs: Handler = (input) => {
    if (input.kind === 'command' && input.text === 'AT+CMGS=13') return '\r\n> ';
    if (input.kind === 'command' && input.text === 'AT+CMGS=99') return answer('+CMS ERROR: 304');
    if (input.kind === 'text') return ['\r\n+CMTI: "SM",1\r\n', answer('+CMGS: 7', 'OK')];
    return undefined;
  };

  for (const echo of [false, true]) {
    it(`sends the payload after the prompt and returns +CMGS (echo ${echo ? 'on' : 'off'})`, async () => {
      const { channel, device, urcs } = await setup(cmgs, { echo });
      const res = await channel.runWithPrompt('AT+CMGS=13', pdu, { timeoutMs: 5000 });
      expect(res).toEqual({ command: 'AT+CMGS=13', lines: ['+CMGS: 7'], final: 'OK' });
      expect(device.received).toEqual([
        { kind: 'command', text: 'AT+CMGS=13' },
        { kind: 'text', text: pdu },
      ]);
      expect(urcs.map((u) => u.name)).toEqual(['cmti']);
    });
  }

  it('rejects at once when the modem answers an error instead of the prompt', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel, device } = await setup(cmgs);
    const err = await rejection(channel.runWithPrompt('AT+CMGS=99', pdu));
    expect(err.message).toBe('AT+CMGS=99 failed: +CMS ERROR: 304 (invalid PDU mode parameter)');
    expect(device.received).toEqual([{ kind: 'command', text: 'AT+CMGS=99' }]);
  });

  it('a missing prompt times out and the modem is told to cancel (ESC)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { channel, device } = await setup(() => undefined);
    const p = rejection(channel.runWithPrompt('AT+CMGS=13', pdu, { timeoutMs: 1000 }));
    await vi.advanceTimersByTimeAsync(1000);
    const err = await p;
    expect(err.code).toBe('AT_TIMEOUT');
    expect(err.message).toBe("AT+CMGS=13: no '> ' prompt within 1000 ms");
    await vi.advanceTimersByTimeAsync(10);
    expect(device.received.map((i) => i.kind)).toEqual(['command', 'cancel']);
  });

  it('a prompt nobody waits for is cancelled with ESC', async () => {
    const { device } = await setup(() => undefined);
    await device.send('\r\n> ');
    await new Promise((r) => setImmediate(r));
    expect(device.received).toEqual([{ kind: 'cancel', text: '' }]);
  });
});

describe('SerialAtChannel: garbage', () => {
  /** Random bytes with line breaks; every piece between line breaks is text-framed with a NUL inside (never text). */
  function randomNoise(seed: number, length: number): Buffer {
    let s = seed;
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      out[i] = (s >>> 16) & 0xff;
    }
    let start = 0;
    for (let i = 0; i <= length; i++) {
      if (i < length && out[i] !== 0x0d && out[i] !== 0x0a) continue;
      const len = i - start;
      if (len > 0 && len <= 2) out.fill(0, start, i);
      if (len > 2) {
        out[start] = 0x78;
        out[i - 1] = 0x78;
        out[start + Math.floor(len / 2)] = 0x00;
      }
      start = i + 1;
    }
    return out;
  }
  const nonBreakBytes = (buf: Buffer): number => buf.filter((x) => x !== 0x0d && x !== 0x0a).length;

  for (const seed of [1, 2, 3]) {
    it(`random binary (with NUL) interleaved with a response: response intact, garbage reported (seed ${seed})`, async () => {
      const noise = randomNoise(seed, 300);
      const { channel, garbage } = await setup((input) =>
        input.kind === 'command'
          ? [Buffer.concat([Buffer.from('\r\n+CSQ: 21,99\r\n'), noise]), noise, Buffer.from('\r\n\r\nOK\r\n')]
          : undefined,
      );
      const res = await channel.run('AT+CSQ');
      expect(res).toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
      expect(garbage.length).toBeGreaterThan(0);
      expect(garbage.reduce((n, g) => n + g.bytes.length, 0)).toBe(2 * nonBreakBytes(noise));
      expect(garbage.some((g) => g.bytes.includes(0))).toBe(true);
      await expect(channel.run('AT+CSQ')).resolves.toMatchObject({ lines: ['+CSQ: 21,99'] });
    });
  }
});

describe('SerialAtChannel: port closed or vanished', () => {
  it('unplug mid-command rejects pending and queued commands at once and emits close with disconnected', async () => {
    const { channel, device } = await setup(() => undefined);
    const closes: Array<{ disconnected: boolean }> = [];
    channel.on('close', (info) => closes.push(info));
    const first = rejection(channel.run('AT+COPS?', { timeoutMs: 60_000 }));
    const queued = rejection(channel.run('AT+CSQ', { timeoutMs: 60_000 }));
    await new Promise((r) => setImmediate(r));
    device.unplug();
    const [e1, e2] = await Promise.all([first, queued]);
    expect(e1.message).toBe(
      'AT+COPS? failed: serial port ' + channel['link'].path + ' vanished (unplugged or USB reset)',
    );
    expect(isPortClosedError(e1)).toBe(true);
    expect(isPortClosedError(e2)).toBe(true);
    expect((e1.cause as PortError).code).toBe('PORT_CLOSED');
    expect(closes).toEqual([expect.objectContaining({ disconnected: true })]);
    expect(channel.isOpen).toBe(false);

    const after = await rejection(channel.run('AT'));
    expect(isPortClosedError(after)).toBe(true);
    expect(after.message).toMatch(/^AT failed: serial port .* is closed$/);
  });

  it('close() by the bridge rejects what is pending and emits close without disconnected', async () => {
    const { channel } = await setup(() => undefined);
    const closes: Array<{ disconnected: boolean }> = [];
    channel.on('close', (info) => closes.push(info));
    const pending = rejection(channel.run('AT+CSQ', { timeoutMs: 60_000 }));
    await new Promise((r) => setImmediate(r));
    await channel.close();
    expect(isPortClosedError(await pending)).toBe(true);
    expect(closes).toEqual([{ disconnected: false }]);
  });
});

describe('SerialAtChannel: transcript', () => {
  it('keeps the last lines in and out, bounded', async () => {
    const path = `virtual:mock-at-${process.pid}-${++counter}`;
    const device = new ScriptedDevice(basic);
    const unregister = registerVirtualDevice(path, device);
    const link = await openVirtualLink(path);
    const channel = new SerialAtChannel({ link, logger: silentLogger(), transcriptSize: 4 });
    cleanups.push(async () => {
      await channel.close();
      unregister();
    });
    await channel.run('AT');
    await channel.run('AT+CSQ');
    expect(channel.transcript().map((t) => `${t.dir} ${t.text}`)).toEqual([
      'in OK',
      'out AT+CSQ',
      'in +CSQ: 21,99',
      'in OK',
    ]);
  });
});
