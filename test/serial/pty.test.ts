/**
 * The native serial binding on a real pseudo-terminal pair (socat): the bridge end runs the AT channel, the modem end
 * a tiny responder over a second native link. Skipped only when socat is not installed (CI installs it).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { hasSocat, ptyPair, type PtyPair } from '../support/pty.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialAtChannel } from '../../src/at/channel.js';
import type { Urc } from '../../src/at/types.js';
import { PortError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import type { SerialLink } from '../../src/serial/link.js';
import { openSerialLink } from '../../src/serial/serial-link.js';

if (!hasSocat)
  console.warn('pty.test: socat is not installed; skipping the native pseudo-terminal test (apt-get install socat)');

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('native serial binding', () => {
  it('opening a path that does not exist gives PORT_NOT_FOUND with a hint', async () => {
    const path = join(tmpdir(), `no-such-modem-${process.pid}`);
    const err = await openSerialLink({ path, baudRate: 115200 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).code).toBe('PORT_NOT_FOUND');
    expect((err as PortError).message).toContain(path);
    expect((err as PortError).hint).toMatch(/by-id/);
  });

  describe.skipIf(!hasSocat)('over a socat pseudo-terminal pair', () => {
    let dir = '';
    let pair: PtyPair | undefined;
    let modem: SerialLink | undefined;
    let bridge: SerialLink | undefined;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'pulsa-pty-'));
      pair = await ptyPair(join(dir, 'modem'), join(dir, 'bridge'));
    });

    afterAll(async () => {
      await bridge?.close().catch(() => undefined);
      await modem?.close().catch(() => undefined);
      await pair?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('runs AT commands through the channel and splits a URC out of a response', async () => {
      modem = await openSerialLink({ path: join(dir, 'modem'), baudRate: 115200 });
      const modemLink = modem;
      let pending = '';
      const received: string[] = [];
      modemLink.on('data', (chunk) => {
        pending += chunk.toString('latin1');
        let cr: number;
        while ((cr = pending.indexOf('\r')) >= 0) {
          const cmd = pending.slice(0, cr).trim();
          pending = pending.slice(cr + 1);
          received.push(cmd);
          void (async () => {
            if (cmd === 'AT') await modemLink.write('\r\nOK\r\n');
            else if (cmd === 'AT+CSQ') {
              await modemLink.write('\r\n+CSQ: 21,99\r\n');
              await delay(20);
              await modemLink.write('\r\n+CMTI: "SM",');
              await delay(20);
              await modemLink.write('7\r\n');
              await modemLink.write('\r\nOK\r\n');
            } else await modemLink.write('\r\nERROR\r\n');
          })();
        }
      });

      bridge = await openSerialLink({ path: join(dir, 'bridge'), baudRate: 115200 });
      const channel = new SerialAtChannel({
        link: bridge,
        logger: silentLogger(),
        defaultTimeoutMs: 5000,
        urcs: [
          { name: 'cmti', pattern: /^\+CMTI:/, parse: (l) => ({ index: Number(/,(\d+)/.exec(l[0] ?? '')?.[1]) }) },
        ],
      });
      const urcs: Urc[] = [];
      channel.on('urc', (u) => urcs.push(u));

      await expect(channel.run('AT')).resolves.toEqual({ command: 'AT', lines: [], final: 'OK' });
      await expect(channel.run('AT+CSQ')).resolves.toEqual({ command: 'AT+CSQ', lines: ['+CSQ: 21,99'], final: 'OK' });
      expect(urcs).toEqual([{ name: 'cmti', lines: ['+CMTI: "SM",7'], data: { index: 7 } }]);
      await expect(channel.run('AT+NOPE')).rejects.toThrow('AT+NOPE failed: ERROR');
      expect(received).toEqual(['AT', 'AT+CSQ', 'AT+NOPE']);
    });

    it('a port another process (or link) holds is PORT_BUSY, with the ModemManager hint', async () => {
      // A pair of its own: the test above keeps both ends of the shared pair open.
      const own = await ptyPair(join(dir, 'busy-a'), join(dir, 'busy-b'));
      const first = await openSerialLink({ path: join(dir, 'busy-a'), baudRate: 115200 });
      try {
        const err = await openSerialLink({ path: join(dir, 'busy-a'), baudRate: 115200 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PortError);
        expect((err as PortError).code).toBe('PORT_BUSY');
        expect((err as PortError).hint).toMatch(/ModemManager/);
      } finally {
        await first.close();
        await own.close();
      }
    });
  });
});
