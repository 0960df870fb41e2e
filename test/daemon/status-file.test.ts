/**
 * StatusFile (src/daemon/status-file.ts) on a real directory: writes never overlap and coalesce, and stop() waits for
 * the write in flight and refuses later ones, so the daemon's removal of status.json after a stop is final.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StatusFile } from '../../src/daemon/status-file.js';
import { silentLogger } from '../../src/log.js';
import { until } from '../support/until.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'status-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A snapshot that waits until released, counting how many were taken. */
function gated() {
  let n = 0;
  let open: (() => void) | undefined;
  const snapshot = () => {
    n++;
    return new Promise<object>((resolve) => (open = () => resolve({ n })));
  };
  return { snapshot, taken: () => n, release: () => open?.() };
}

describe('StatusFile', () => {
  it('coalesces requests made during a write into one more write', async () => {
    const g = gated();
    const file = path.join(dir, 'status.json');
    const sf = new StatusFile({ file, logger: silentLogger(), snapshot: g.snapshot, intervalMs: 3_600_000 });
    sf.start();
    sf.writeSoon();
    sf.writeSoon();
    expect(g.taken()).toBe(1);
    g.release();
    await until(() => g.taken() === 2, 'the second write to start', 10_000); // the two requests became one
    await new Promise((r) => setTimeout(r, 50));
    expect(g.taken()).toBe(2); // and not two more
    g.release();
    await sf.stop();
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ n: 2, pid: process.pid });
  });

  it('stop() waits for the write in flight and refuses later ones: a removal after it is final', async () => {
    const g = gated();
    const file = path.join(dir, 'status.json');
    const sf = new StatusFile({ file, logger: silentLogger(), snapshot: g.snapshot, intervalMs: 3_600_000 });
    sf.start();
    let stopped = false;
    const stopping = sf.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false); // the first write still waits for its snapshot
    sf.writeSoon(); // e.g. a modem's last state change during the stop
    g.release();
    await stopping;
    expect(existsSync(file)).toBe(true);
    await rm(file);
    await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(file)).toBe(false);
    expect(g.taken()).toBe(1);
  });
});
