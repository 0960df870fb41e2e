/**
 * The diagnostics CLI end to end, in-process: main(argv, io) with captured output, on the virtual modem
 * (--simulate: a SIM800-like modem with two operator SMS stored). What an operator sees on stdout/stderr and the
 * exit code are the contract: errors are `error: ...` + `hint: ...` with exit 1, usage errors exit 2.
 */
import { PassThrough } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { allCommands, createProgram, main } from '../../src/cli.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';
import { cli, captureIo, sampleModem, withSimulateDevice } from '../support/cli.js';
import { defaultActiveUntil } from '../../src/virtual-modem/ussd-script.js';
import { until } from '../support/until.js';

beforeEach(() => {
  process.exitCode = undefined;
});
afterEach(() => {
  process.exitCode = undefined;
  vi.useRealTimers();
});

describe('info', () => {
  it('prints identity, SIM, signal, registration, operator, storage, SMSC and profile', async () => {
    const r = await cli(['info', '--simulate']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    for (const line of [
      'profile: simcom',
      'manufacturer: SIMCOM_Ltd',
      'model: SIMCOM_SIM800L',
      'imei: 356938035643809',
      'imsi: 510101234567890',
      'iccid: 89621012345678901234',
      'simState: READY',
      'dbm: -73',
      'bars: 4',
      'text: registered home',
      'operator: TELKOMSEL',
      'storage: SM 2/30 used (read), SM 2/30 used (write), SM 2/30 used (receive)',
      'smsc: +6281100000',
    ]) {
      expect(r.out).toContain(line);
    }
  });

  it('--json gives the same facts as one JSON document', async () => {
    const r = await cli(['info', '--simulate', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({
      profile: 'simcom',
      identity: {
        manufacturer: 'SIMCOM_Ltd',
        model: 'SIMCOM_SIM800L',
        imei: '356938035643809',
        imsi: '510101234567890',
        iccid: '89621012345678901234',
      },
      simState: 'READY',
      signal: { dbm: -73, bars: 4 },
      registration: { registered: true, text: 'registered home' },
      operator: 'TELKOMSEL',
      storage: [
        { memory: 'SM', used: 2, total: 30 },
        { memory: 'SM', used: 2, total: 30 },
        { memory: 'SM', used: 2, total: 30 },
      ],
      smsc: '+6281100000',
      errors: [],
    });
  });
});

describe('at, one command', () => {
  it('prints the modem answer and OK', async () => {
    const r = await cli(['at', '--simulate', 'AT+CSQ']);
    expect(r).toEqual({ out: '+CSQ: 20,99\nOK\n', err: '', code: 0 });
  });

  it('an unknown command prints the modem ERROR and exits 1', async () => {
    const r = await cli(['at', '--simulate', 'AT+NOSUCH']);
    expect(r.out).toBe('ERROR\n');
    expect(r.err).toBe('error: AT+NOSUCH failed: ERROR\n');
    expect(r.code).toBe(1);
  });

  it('explains a numeric error code on stderr, the modem words stay on stdout', async () => {
    const r = await cli(['at', '--simulate', 'AT+CMGR=99']);
    expect(r.out).toBe('+CMS ERROR: 321\n');
    expect(r.err).toMatch(/^error: AT\+CMGR=99 failed: \+CMS ERROR: 321 \(.*invalid memory index.*\)\n$/i);
    expect(r.code).toBe(1);
  });

  it('--json: {command, lines, final}; a modem error adds error and code and exits 1', async () => {
    const ok = await cli(['at', '--simulate', '--json', 'AT+CSQ']);
    expect(JSON.parse(ok.out)).toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 20,99'], final: 'OK' });
    expect(ok.code).toBe(0);
    process.exitCode = undefined;
    const bad = await cli(['at', '--simulate', '--json', 'AT+NOSUCH']);
    expect(JSON.parse(bad.out)).toEqual({
      command: 'AT+NOSUCH',
      lines: [],
      final: 'ERROR',
      error: 'AT+NOSUCH failed: ERROR',
      code: 'AT_ERROR',
    });
    expect(bad.code).toBe(1);
  });
});

describe('at, interactive', () => {
  it('answers typed commands, shows URCs as they arrive, and returns on end of input', async () => {
    const input = new PassThrough();
    let vm: VirtualModem | undefined;
    const device = {
      virtualModem: (path: string) => {
        vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, noise: false });
        vm.start();
        return vm;
      },
    };
    const { io, result } = captureIo({ input });
    const done = withSimulateDevice(device, () => main(['node', 'pulsa-bridge', 'at', '--simulate'], io));
    input.write('AT+CSQ\n');
    await vi.waitFor(() => expect(result().out).toContain('+CSQ: 20,99\nOK\n'));
    vm!.injectUrc('+CMTI: "SM",3');
    await vi.waitFor(() => expect(result().out).toContain('[urc] +CMTI: "SM",3'));
    input.write('AT+NOSUCH\n');
    await vi.waitFor(() => expect(result().out).toContain('ERROR\n'));
    input.end(); // Ctrl-D
    await done;
    const r = result();
    expect(r.out).toMatch(/^interactive AT terminal/);
    expect(r.out).not.toContain('AT> '); // no prompt when input is not a terminal
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(vm!.present).toBe(false); // the session closed and the device is gone
  });

  it('end of input right after a command still prints its answer before returning', async () => {
    const input = new PassThrough();
    const { io, result } = captureIo({ input });
    const done = withSimulateDevice({}, () => main(['node', 'pulsa-bridge', 'at', '--simulate'], io));
    input.end('AT+CSQ\nATI\n');
    await done;
    expect(result().out).toContain('+CSQ: 20,99\nOK\n');
    expect(result().out).toContain('SIM800');
    expect(result().code).toBe(0);
  });
});

describe('ussd', () => {
  it('dials *888# and prints the decoded balance menu', async () => {
    const r = await cli(['ussd', '--simulate', '*888#']);
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      `[status 1: more input expected]\nSisa pulsa Rp.24025.Aktif sd ${defaultActiveUntil()}.\n1.Beli Paket\n2.Info Kartu\n`,
    );
  });

  it('walks the credit-transfer menu with --reply', async () => {
    const r = await cli(['ussd', '--simulate', '*858*081234567890*5000#', '--reply', '1']);
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      '[status 1: more input expected]\nKirim pulsa Rp5000 ke 081234567890? 1.Ya 2.Tidak\n' +
        '[status 0: done]\nTransfer berhasil. Pulsa Rp5000 telah dikirim ke 081234567890. Sisa pulsa Rp19025.\n',
    );
  });

  it('a code the network does not support prints the reply and exits 1 with an error line', async () => {
    const r = await cli(['ussd', '--simulate', '*999*1#']);
    expect(r.out).toContain('[status 4: not supported]');
    expect(r.err).toContain('error: the network does not support *999*1#');
    expect(r.code).toBe(1);
  });

  it('--json lists every reply with its status', async () => {
    const r = await cli(['ussd', '--simulate', '*858*081234567890*5000#', '--reply', '2', '--json']);
    const replies = JSON.parse(r.out) as Array<{ status: number; text: string }>;
    expect(replies.map((x) => [x.status, x.text])).toEqual([
      [1, 'Kirim pulsa Rp5000 ke 081234567890? 1.Ya 2.Tidak'],
      [0, 'Transfer pulsa dibatalkan.'],
    ]);
  });
});

describe('sms', () => {
  it('list shows both stored messages decoded, with their indexes', async () => {
    const r = await cli(['sms', 'list', '--simulate']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /^#1 \[unread\] from 858 at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+07:00\n  Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08\. Cek pulsa melalui \*888#\. Info CS: 188\n/,
    );
    expect(r.out).toMatch(
      /\n#2 \[unread\] from 168 at .*\n  Nikmati Xtra Combo! Anda menerima Pulsa dari 6285941020493 sebesar Rp7000\.\n/,
    );
  });

  it('list --json gives index, status, sender, text and the raw PDU', async () => {
    const list = JSON.parse((await cli(['sms', 'list', '--simulate', '--json'])).out) as Array<Record<string, unknown>>;
    expect(list).toHaveLength(2);
    expect(list[0]).toMatchObject({
      index: 1,
      status: 'unread',
      sender: '858',
      text: expect.stringContaining('Rp 5000'),
    });
    expect(list[1]).toMatchObject({
      index: 2,
      status: 'unread',
      sender: '168',
      text: expect.stringContaining('Rp7000'),
    });
    expect(list[0]!.pdu).toMatch(/^[0-9A-F]+$/);
  });

  it('read 1 prints that message; an empty index is an error with a hint', async () => {
    const r = await cli(['sms', 'read', '--simulate', '1']);
    expect(r.out).toMatch(/^#1 \[unread\] from 858 at .*\n  Anda mendapatkan penambahan pulsa Rp 5000/);
    expect(r.code).toBe(0);
    const missing = await cli(['sms', 'read', '--simulate', '7']);
    expect(missing.err).toBe(
      'error: no SMS at index 7\nhint: `pulsa-bridge sms list` shows the stored messages and their indexes\n',
    );
    expect(missing.code).toBe(1);
  });

  it('list says which stored messages the receive path will not forward (TP-PID, DCS) and why', async () => {
    const vm = sampleModem('virtual:cli');
    vm.stop();
    vm.injectSms({ from: '858', text: 'ping', pid: 0x40, delivery: 'store' });
    vm.injectSms({ from: '858', text: 'OTA', pid: 0x7f, dcs: 0xf2, encoding: 'gsm7', delivery: 'store' });
    const virtualModem = () => (vm.start(), vm);
    const r = await cli(['sms', 'list', '--simulate'], { virtualModem });
    const header = (index: number) => r.out.split('\n').find((l) => l.startsWith(`#${index} `));
    expect(header(3)).toMatch(/^#3 \[unread\] from 858 at \S+ \(not forwarded: /);
    expect(header(3)).toMatch(/\(not forwarded: Short Message Type 0 \(TP-PID 0x40\): discarded\)$/);
    expect(header(4)).toMatch(
      /\(not forwarded: \(U\)SIM Data download \(TP-PID 0x7F\), meant for the modem or SIM: archived/,
    );
    expect(r.out).toContain('discarded)\n  ping\n');
    expect(r.out).not.toMatch(/#1 .*not forwarded/);
  });

  it('delete 1, then list shows only the other message (the SIM keeps its storage between sessions)', async () => {
    const vm = sampleModem('virtual:cli');
    vm.stop();
    const virtualModem = () => (vm.start(), vm);
    const del = await cli(['sms', 'delete', '--simulate', '1'], { virtualModem });
    expect(del).toEqual({ out: 'deleted index 1\n', err: '', code: 0 });
    const list = await cli(['sms', 'list', '--simulate', '--json'], { virtualModem });
    expect((JSON.parse(list.out) as Array<{ index: number; sender: string }>).map((m) => [m.index, m.sender])).toEqual([
      [2, '168'],
    ]);
    const json = await cli(['sms', 'delete', '--simulate', '2', '--json'], { virtualModem });
    expect(JSON.parse(json.out)).toEqual({ deleted: 2 });
    expect((await cli(['sms', 'list', '--simulate'], { virtualModem })).out).toBe('no SMS on the modem\n');
  });

  it('send: a short text in one part, a long one as concatenated parts the modem reads back whole', async () => {
    const vm = sampleModem('virtual:cli');
    vm.stop();
    const virtualModem = () => (vm.start(), vm);
    const one = await cli(['sms', 'send', '--simulate', '--to', '151', 'TRANSFERPULSA', '081234567890', '5000'], {
      virtualModem,
    });
    expect(one.code).toBe(0);
    expect(one.out).toMatch(/^sent to 151 in 1 part\(s\); message reference\(s\) \d+\n$/);
    const long = 'BAGI 081234567890 5000 '.repeat(10).trim();
    const two = await cli(['sms', 'send', '--simulate', '--to', '+6281234567890', long, '--json'], { virtualModem });
    expect(JSON.parse(two.out)).toMatchObject({ to: '+6281234567890', parts: 2 });
    const sent = vm.sentMessages();
    expect(sent.map((m) => [m.destination, m.text])).toEqual([
      ['151', 'TRANSFERPULSA 081234567890 5000'],
      ['+6281234567890', long.slice(0, 153)],
      ['+6281234567890', long.slice(153)],
    ]);
  });

  it('a non-numeric index is a usage error', async () => {
    const r = await cli(['sms', 'read', '--simulate', 'abc']);
    expect(r.err).toContain("error: command-argument value 'abc' is invalid for argument 'index'");
    expect(r.code).toBe(2);
  });
});

describe('errors an operator meets', () => {
  it('a missing port: one error line, a hint, exit 1', async () => {
    const r = await cli(['info', '--port', '/dev/does-not-exist']);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^error: serial port \/dev\/does-not-exist does not exist\nhint: .*pulsa-bridge ports.*\n$/);
    expect(r.code).toBe(1);
  });

  it('no port and no --simulate says what to pass: a usage error (exit 2)', async () => {
    const r = await cli(['info']);
    expect(r.err).toMatch(/^error: no port given\nhint: pass --port .*--simulate.*\n$/);
    expect(r.code).toBe(2);
  });

  it('an empty AT command is a usage error (exit 2), before any port is opened', async () => {
    const factory = vi.fn(sampleModem);
    const r = await cli(['at', '--simulate', ''], { virtualModem: factory });
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^error: empty AT command\nhint: .*AT\+CSQ.*interactive terminal\n$/);
    expect(r.code).toBe(2);
    expect(factory).not.toHaveBeenCalled();
  });

  it('sms send to an undialable number is a usage error (exit 2), before any port is opened', async () => {
    const factory = vi.fn(sampleModem);
    const r = await cli(['sms', 'send', '--simulate', '--to', 'abc!', 'hello'], { virtualModem: factory });
    expect(r.out).toBe('');
    expect(r.err).toBe('error: destination "abc!" is not a dialable number (digits, * and #, at most 20)\n');
    expect(r.code).toBe(2);
    expect(factory).not.toHaveBeenCalled();
  });

  it.each([
    [
      ['info', '--simulate', '--timeout', '0'],
      "error: option '--timeout <ms>' argument '0' is invalid. expected a timeout in ms (a whole number >= 1).",
    ],
    [
      ['sms', 'delete', '--simulate', '--', '-1'],
      "error: command-argument value '-1' is invalid for argument 'index'. expected a storage index (a whole number >= 0).",
    ],
    [
      ['simulate', '--link', '/tmp/never-created', '--baud', 'fast'],
      "error: option '--baud <rate>' argument 'fast' is invalid. expected a baud rate such as 115200 or 9600.",
    ],
  ])('numeric option %j is validated: usage error, exit 2', async (args, message) => {
    const factory = vi.fn(sampleModem);
    const r = await cli(args, { virtualModem: factory });
    expect(r.err).toContain(message);
    expect(r.code).toBe(2);
    expect(factory).not.toHaveBeenCalled();
  });

  it('--baud abc is a usage error, before any port is opened', async () => {
    const factory = vi.fn(sampleModem);
    const r = await cli(['info', '--simulate', '--baud', 'abc'], { virtualModem: factory });
    expect(r.err).toContain(
      "error: option '-b, --baud <rate>' argument 'abc' is invalid. expected a baud rate such as 115200 or 9600.",
    );
    expect(r.code).toBe(2);
    expect(factory).not.toHaveBeenCalled();
  });

  it('a modem that never answers: `no answer to AT` with a hint, exit 1, port closed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let written = 0; // bytes that reached the modem (which drops them: it is stalled)
    class CountingModem extends VirtualModem {
      override onWrite(chunk: Buffer): void {
        written += chunk.length;
        super.onWrite(chunk);
      }
    }
    let vm: VirtualModem | undefined;
    const virtualModem = (path: string) => {
      vm = new CountingModem({ path, profile: 'simcom', bootStepMs: 0, noise: false });
      vm.start();
      vm.stall('forever');
      return vm;
    };
    const { io, result } = captureIo({});
    let finished = false;
    try {
      const done = withSimulateDevice({ virtualModem }, () =>
        main(['node', 'pulsa-bridge', 'info', '--simulate'], io),
      ).finally(() => (finished = true));
      // Up to its first AT the CLI waits on real I/O, not on timers: the command's modules, the direct path and the
      // virtual port are imported lazily, each import a round trip to the test runner's main process (slow under
      // load). The fake clock starts once that AT has reached the modem; from then on the CLI waits on its timers only.
      await until(() => finished || written > 0, 'the CLI to send AT to the modem', 10_000);
      for (let i = 0; i < 100 && !finished; i++) await vi.advanceTimersByTimeAsync(500);
      await done;
      const r = result();
      expect(r.err).toMatch(
        /^error: no answer to AT on virtual:cli\?samples=1 at 115200 baud\nhint: is this the AT port\? .*\n$/,
      );
      expect(r.code).toBe(1);
      expect(vm!.present).toBe(false);
    } finally {
      vm?.stop(); // a failed attempt must not leave virtual:cli held for the next test (or its retry)
    }
  });

  it.each([
    [['bogus'], "error: unknown command 'bogus'"],
    [['info', '--bogus'], "error: unknown option '--bogus'"],
    [['ussd', '--simulate'], "error: missing required argument 'code'"],
    [['info', '--simulate', '--profile', 'nokia'], "error: option '--profile <id>' argument 'nokia' is invalid"],
    [['sms'], 'Usage: pulsa-bridge sms'],
  ])('usage error %j exits 2', async (args, message) => {
    const r = await cli(args);
    expect(r.err).toContain(message);
    expect(r.code).toBe(2);
  });

  it('every command has --help, printed to stdout with exit 0', async () => {
    const commands = allCommands(await createProgram(captureIo().io));
    expect(commands.length).toBeGreaterThan(10);
    for (const c of commands) {
      const path: string[] = [];
      for (let x: typeof c | null = c; x?.parent; x = x.parent) path.unshift(x.name());
      const r = await cli([...path, '--help']);
      expect(r.out, path.join(' ')).toContain(`Usage: pulsa-bridge${path.map((p) => ` ${p}`).join('')}`);
      expect(r.err, path.join(' ')).toBe('');
      expect(r.code, path.join(' ')).toBe(0);
    }
  });

  it('--version exits 0', async () => {
    const r = await cli(['--version']);
    expect(r.out).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.code).toBe(0);
  });
});

describe('ports', () => {
  it('runs on this machine (udevadm or not) without crashing', async () => {
    const json = await cli(['ports', '--json']);
    expect(json.code).toBe(0);
    const result = JSON.parse(json.out) as { ports: unknown[]; source: string };
    expect(Array.isArray(result.ports)).toBe(true);
    expect(['udev', 'sysfs']).toContain(result.source);
    const human = await cli(['ports']);
    expect(human.code).toBe(0);
    expect(human.out).toMatch(/^(PORT|no serial ports found)/);
  });
});

describe('config check', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pulsa-cli-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the example config is OK and printed with defaults', async () => {
    const r = await cli(['config', 'check', 'config.example.json']);
    expect(r.code).toBe(0);
    // OK, and the example's values named: its webhook host and its made-up modem (not plugged in here either).
    expect(r.out.split('\n')[0]).toBe('config.example.json: OK, with 3 warning(s)');
    expect(r.err).toContain(
      "warning: webhook https://convert.example.com/api/v1/convert-pulsa/webhook/sms-gateway is the example's address",
    );
    expect(r.err).toMatch(/warning: modems\[0\]\.port \S+0123456789ABCDEF\S+ is the example's made-up modem/);
    expect(r.err).toMatch(/warning: modems\[0\]\.port \S+ \(telkomsel-1\) does not exist on this machine/);
    const cfg = JSON.parse(r.out.slice(r.out.indexOf('\n') + 1)) as { modems: Array<{ name: string }> };
    expect(cfg.modems[0]!.name).toBe('telkomsel-1');
  });

  it('secrets are masked', async () => {
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        webhook: {
          baseUrl: 'https://convert.example.com/api',
          headers: { Authorization: 'Bearer s3cr3t-token' },
          hmacSecret: 'hmac-s3cr3t',
        },
        spool: { dir: join(dir, 'spool') },
        modems: [{ name: 'm1', port: '/dev/ttyUSB2', senders: ['858'], pin: '4321' }],
      }),
    );
    const r = await cli(['config', 'check', file, '--json']);
    expect(r.code).toBe(0);
    for (const secret of ['s3cr3t-token', 'hmac-s3cr3t', '4321']) expect(r.out).not.toContain(secret);
    const cfg = JSON.parse(r.out) as {
      webhook: { headers: Record<string, string>; hmacSecret: string };
      modems: Array<{ pin: string }>;
    };
    expect(cfg.webhook.headers.Authorization).toBe('********');
    expect(cfg.webhook.hmacSecret).toBe('********');
    expect(cfg.modems[0]!.pin).toBe('********');
  });

  it('a file that is not an object: the file is named, then `expected an object`', async () => {
    const file = join(dir, 'list.json');
    await writeFile(file, '[]');
    const r = await cli(['config', 'check', file]);
    expect(r.out).toBe('');
    expect(r.err).toBe(`error: invalid config: ${file}\n  - expected an object\n`);
    expect(r.code).toBe(1);
  });

  it('shows the warning the daemon would log, on stderr; credentials in URLs are masked', async () => {
    const file = join(dir, 'config.json');
    await writeFile(
      file,
      JSON.stringify({
        webhook: { baseUrl: 'https://op:pa55@convert.example.com/api' },
        modems: [{ name: 'm1', port: '/dev/ttyUSB2', senders: ['858'] }],
      }),
    );
    const r = await cli(['config', 'check', file]);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('pa55');
    expect(r.err).not.toContain('pa55');
    expect(r.err).toContain(
      'warning: webhook base URL https://********:********@convert.example.com/api does not end in /api/v1/convert-pulsa; ' +
        'posting to https://********:********@convert.example.com/api/webhook/sms-gateway\n',
    );
    const cfg = JSON.parse(r.out.slice(r.out.indexOf('\n') + 1)) as {
      webhook: { baseUrl: string; endpoint: string };
      warnings: string[];
    };
    expect(cfg.webhook).toMatchObject({
      baseUrl: 'https://********:********@convert.example.com/api',
      endpoint: 'https://********:********@convert.example.com/api/webhook/sms-gateway',
    });
    expect(cfg.warnings).toHaveLength(2); // the base URL, and the example's host
    const json = await cli(['config', 'check', file, '--json']);
    expect(JSON.parse(json.out)).toMatchObject({
      warnings: [
        expect.stringContaining('does not end in /api/v1/convert-pulsa'),
        expect.stringContaining("is the example's address"),
      ],
    });
  });

  it('a broken config prints every problem as `- path: ...` and exits 1', async () => {
    const file = join(dir, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({ webhook: { baseUrl: 'ftp://x' }, modems: [{ name: 'a', baudRate: -5 }], bogus: 1 }),
    );
    const r = await cli(['config', 'check', file]);
    expect(r.out).toBe('');
    expect(r.code).toBe(1);
    const lines = r.err.trimEnd().split('\n');
    expect(lines[0]).toBe(`error: invalid config: ${file}`);
    expect(lines.slice(1).every((l) => /^ {2}- [\w.[\]]+: /.test(l))).toBe(true);
    for (const p of ['bogus', 'webhook.baseUrl', 'modems[0].port', 'modems[0].senders', 'modems[0].baudRate']) {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^  - ${p.replace(/[[\].]/g, '\\$&')}: `)));
    }
  });
});
