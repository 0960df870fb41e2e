/** A command whose reader goes away (`pulsa-bridge ... | head -1`) ends quietly, without an unhandled EPIPE. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../../bin/pulsa-bridge', import.meta.url));

describe('bin/pulsa-bridge and a closed stdout', () => {
  it('--help into a pipe whose reader is gone: no EPIPE stack, exit 0', async () => {
    const child = spawn(process.execPath, [bin, 'at', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader goes away before the command writes
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(err).not.toMatch(/EPIPE|Unhandled 'error' event/);
    expect(code).toBe(0);
  });
});
