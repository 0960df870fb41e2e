/**
 * The ways a PIN that did not unlock the SIM could still be sent again: a plain ERROR (no AT+CMEE),
 * a timeout, `OK` but still `SIM PIN`, a SIM key that changes between inits, a memory file that cannot be read, a
 * failed write. Each attempt is a new Modem on a scripted channel; the memory is the real file in a real directory.
 */
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AtRunOptions } from '../../src/at/types.js';
import { silentLogger } from '../../src/log.js';
import { Modem } from '../../src/modem/modem.js';
import { PIN_MEMORY_FILE, PinMemoryFile } from '../../src/state/pin-memory.js';
import { FakeChannel, type TableRow } from './fake-channel.js';

function rows(pinAnswer: string[], opts: { iccid?: string | false; cmee?: boolean; cpin?: string } = {}): TableRow[] {
  const r: TableRow[] = [
    ['ATE0', ['OK']],
    ['AT+CMEE=1', opts.cmee === false ? ['ERROR'] : ['OK']],
    ['AT+CGMI', ['Generic', 'OK']],
    ['AT+CGMM', ['GSM MODEM', 'OK']],
    ['AT+CGMR', ['1.0', 'OK']],
    ['AT+CGSN', ['356938035643809', 'OK']],
    ['AT+CPIN?', [`+CPIN: ${opts.cpin ?? 'SIM PIN'}`, 'OK']],
    [/^AT\+CPIN="/, pinAnswer],
  ];
  const iccid = opts.iccid ?? '89621012345678901234';
  if (iccid !== false) r.push(['AT+CCID', [iccid, 'OK']], ['AT+ICCID', [`+ICCID: ${iccid}`, 'OK']]);
  return r;
}

interface Attempt {
  sent: number;
  msg: string;
  hint: string | undefined;
  timeouts: Array<number | undefined>;
}

async function attempt(r: TableRow[], memory: PinMemoryFile, name = 'm1'): Promise<Attempt> {
  const fake = FakeChannel.fromTable(r);
  const timeouts: Array<number | undefined> = [];
  const run = fake.run.bind(fake);
  fake.run = (command: string, options?: AtRunOptions) => {
    if (command.startsWith('AT+CPIN="')) timeouts.push(options?.timeoutMs);
    return run(command, options);
  };
  const modem = new Modem({
    channel: fake,
    name,
    logger: silentLogger(),
    pin: '0000',
    pollIntervalMs: 1,
    rejectedPins: memory,
  });
  let hint: string | undefined;
  const msg = await modem.init().then(
    () => 'ok',
    (e: Error & { hint?: string }) => {
      hint = e.hint;
      return e.message;
    },
  );
  return { sent: fake.sent.filter((c) => c.startsWith('AT+CPIN="')).length, msg, hint, timeouts };
}

const tmp = () => mkdtemp(path.join(tmpdir(), 'pinmem-'));
const mem = async () => new PinMemoryFile(await tmp(), silentLogger());

describe('a PIN that did not unlock the SIM is not sent again', () => {
  it('a modem without AT+CMEE answers a plain ERROR to a wrong PIN', async () => {
    const m = await mem();
    const a = await attempt(rows(['ERROR'], { cmee: false }), m);
    expect(a.sent).toBe(1);
    expect(a.msg).toMatch(/entering the PIN failed \(ERROR\).*not sent again/);
    const b = await attempt(rows(['ERROR'], { cmee: false }), m);
    expect(b.sent).toBe(0);
    expect(b.msg).toMatch(/rejected the configured PIN at/);
  });

  it('AT+CPIN="..." times out (a late +CME ERROR: 16 is lost), also across a restart; the PIN gets ~15 s', async () => {
    const dir = await tmp();
    const a = await attempt(rows([]), new PinMemoryFile(dir, silentLogger()));
    expect(a.sent).toBe(1);
    expect(a.timeouts).toEqual([15_000]);
    expect(a.msg).toMatch(/no answer within 15 s/);
    const b = await attempt(rows([]), new PinMemoryFile(dir, silentLogger()));
    expect(b.sent).toBe(0);
  });

  it('OK to the PIN but the SIM still asks for it after polling', async () => {
    const m = await mem();
    const a = await attempt(rows(['OK']), m);
    expect(a.sent).toBe(1);
    expect(a.msg).toMatch(/still not ready .*treated as rejected/);
    const b = await attempt(rows(['OK']), m);
    expect(b.sent).toBe(0);
  });

  it('a PIN sent and never confirmed (a crash) counts as rejected at the next start', async () => {
    const dir = await tmp();
    await new PinMemoryFile(dir, silentLogger()).sending(['iccid:89621012345678901234', 'modem:m1'], '0000');
    const b = await attempt(rows(['+CME ERROR: 16']), new PinMemoryFile(dir, silentLogger()));
    expect(b.sent).toBe(0);
    expect(b.msg).toMatch(/sent to the SIM \(iccid:89621012345678901234\) at .* never confirmed accepted/);
    // The entry written before sending stays until the SIM is READY after a PIN.
    expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).toMatch(/sentAt/);
  });

  it('READY after the PIN clears what was recorded before sending it', async () => {
    const dir = await tmp();
    let checks = 0;
    const r = rows(['OK']).map(([k, v]): TableRow =>
      k === 'AT+CPIN?' ? [k, () => [`+CPIN: ${checks++ === 0 ? 'SIM PIN' : 'READY'}`, 'OK']] : [k, v],
    );
    r.push(
      ['AT+CIMI', ['510101234567890', 'OK']],
      ['AT+CNUM', ['OK']],
      ['AT+CMGF=0', ['OK']],
      ['AT+CPMS=?', ['+CPMS: ("SM"),("SM"),("SM")', 'OK']],
      [/^AT\+CPMS="SM"/, ['+CPMS: 0,30,0,30,0,30', 'OK']],
      ['AT+CNMI=?', ['+CNMI: (0-3),(0-3),(0,2),(0-2),(0,1)', 'OK']],
      [/^AT\+CNMI=/, ['OK']],
    );
    const a = await attempt(r, new PinMemoryFile(dir, silentLogger()));
    expect(a).toMatchObject({ sent: 1, msg: 'ok' });
    expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).not.toMatch(/iccid:|modem:/);
  });

  it('the ICCID read on the first init and unreadable on the next', async () => {
    const m = await mem();
    const a = await attempt(rows(['+CME ERROR: 16']), m);
    const b = await attempt(rows(['+CME ERROR: 16'], { iccid: false }), m);
    expect([a.sent, b.sent]).toEqual([1, 0]);
    expect(b.msg).toMatch(/\(modem:m1\) rejected the configured PIN at/);
  });

  it('the ICCID unreadable on the first init and read on the next', async () => {
    const m = await mem();
    const a = await attempt(rows(['+CME ERROR: 16'], { iccid: false }), m);
    const b = await attempt(rows(['+CME ERROR: 16']), m);
    expect([a.sent, b.sent]).toEqual([1, 0]);
  });

  it('another SIM (another ICCID) in the same modem still gets its one try', async () => {
    const m = await mem();
    await attempt(rows(['+CME ERROR: 16']), m);
    const b = await attempt(rows(['+CME ERROR: 16'], { iccid: '89620000000000000002' }), m);
    expect(b.sent).toBe(1);
  });

  it('a corrupt memory file after a restart: no PIN is sent, the hint names the file, the file is left alone', async () => {
    const dir = await tmp();
    const a = await attempt(rows(['+CME ERROR: 16']), new PinMemoryFile(dir, silentLogger()));
    const corrupt = '{"v":1,"sims":{"iccid:8962';
    await writeFile(path.join(dir, PIN_MEMORY_FILE), corrupt);
    const b = await attempt(rows(['+CME ERROR: 16']), new PinMemoryFile(dir, silentLogger()));
    expect([a.sent, b.sent]).toEqual([1, 0]);
    expect(b.msg).toMatch(/memory of rejected PINs cannot be read .*pin-memory\.json.*not valid JSON/);
    expect(b.hint).toMatch(/remove it only if/);
    expect(await readFile(path.join(dir, PIN_MEMORY_FILE), 'utf8')).toBe(corrupt);
  });

  it('when the attempt cannot be recorded before sending, the PIN is not sent', async () => {
    const dir = await tmp();
    await mkdir(path.join(dir, `${PIN_MEMORY_FILE}.tmp`)); // the write's temporary file cannot be created
    const a = await attempt(rows(['+CME ERROR: 16']), new PinMemoryFile(dir, silentLogger()));
    expect(a.sent).toBe(0);
    expect(a.msg).toMatch(/could not record the PIN attempt .*not sent/);
  });

  it('a rejection whose write failed is still remembered by this process', async () => {
    const dir = await tmp();
    const memory = new PinMemoryFile(dir, silentLogger());
    await mkdir(path.join(dir, `${PIN_MEMORY_FILE}.tmp`));
    await expect(memory.remember(['iccid:1', 'modem:m1'], '0000')).rejects.toThrow();
    expect(await memory.attempt(['modem:m1'], '0000')).toMatchObject({ outcome: 'rejected', key: 'modem:m1' });
    expect(await memory.attempt(['iccid:1', 'modem:m1'], '1111')).toBeUndefined();
  });
});
