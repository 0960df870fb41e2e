/**
 * Test helper: drives a VirtualModem through a real SerialLink (the virtual link) with a tiny line reader of its own
 * (independent of src/at/). Lines are split on CR/LF, empty lines dropped; the `> ` prompt shows up as a line '> '.
 */
import { openVirtualLink } from '../../src/virtual-modem/virtual-link.js';
import type { SerialLink } from '../../src/serial/link.js';
import { VirtualModem, type VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';

const FINAL = /^(OK|ERROR|\+CME ERROR: .*|\+CMS ERROR: .*|COMMAND NOT SUPPORT)$/;

let counter = 0;
export function uniquePath(): string {
  counter += 1;
  return `virtual:vmodem-test-${process.pid}-${counter}`;
}

export class Wire {
  readonly link: SerialLink;
  /** Every byte received, latin1. */
  raw = '';
  private pending = '';
  private queue: string[] = [];
  private wake: (() => void) | undefined;

  constructor(link: SerialLink) {
    this.link = link;
    link.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      this.raw += text;
      this.pending += text;
      const parts = this.pending.split(/\r\n|\r|\n/);
      this.pending = parts.pop() ?? '';
      for (const p of parts) if (p !== '') this.queue.push(p);
      if (this.pending === '> ') {
        this.queue.push('> ');
        this.pending = '';
      }
      this.wake?.();
    });
  }

  static async open(path: string): Promise<Wire> {
    return new Wire(await openVirtualLink(path));
  }

  /** Waits for the next line matching `pred`; lines before it are consumed and returned too. */
  async until(pred: (line: string) => boolean): Promise<string[]> {
    const seen: string[] = [];
    for (;;) {
      while (this.queue.length > 0) {
        const line = this.queue.shift() ?? '';
        seen.push(line);
        if (pred(line)) return seen;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async next(): Promise<string> {
    const lines = await this.until(() => true);
    return lines[0] ?? '';
  }

  /** Sends a command line and returns every line up to and including the final result. */
  async cmd(command: string): Promise<{ lines: string[]; final: string }> {
    await this.link.write(`${command}\r`);
    const lines = await this.until((l) => FINAL.test(l));
    return { lines: lines.slice(0, -1), final: lines[lines.length - 1] ?? '' };
  }

  /** Lines received and not read yet (does not wait). */
  drain(): string[] {
    return this.queue.splice(0);
  }

  async close(): Promise<void> {
    if (this.link.isOpen) await this.link.close();
  }
}

/** Lets the virtual link's nextTick deliveries run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Virtual modems booted by a test file, with the wire to each; `shutdownBooted` closes them after each test. */
export const running: Array<{ modem: VirtualModem; wire: Wire }> = [];

export async function boot(options: Partial<VirtualModemOptions> = {}): Promise<{ modem: VirtualModem; wire: Wire }> {
  const modem = new VirtualModem({ path: uniquePath(), bootStepMs: 0, noise: false, ...options });
  modem.start();
  const wire = await Wire.open(modem.path);
  running.push({ modem, wire });
  return { modem, wire };
}

/** Closes every booted modem; returns the simulator's internal errors (a test expects none). */
export async function shutdownBooted(): Promise<Error[]> {
  const errors: Error[] = [];
  for (const { modem, wire } of running.splice(0)) {
    await wire.close();
    modem.stop();
    errors.push(...modem.internalErrors());
  }
  return errors;
}
