/**
 * A tiny scripted modem behind a virtual serial link, for AT-channel tests (independent of src/virtual-modem).
 * Commands are collected up to CR and passed to a handler; after the device sent a `> ` prompt it collects message
 * text up to Ctrl-Z (or ESC = cancel). Replies are chunks emitted one macrotask apart, so each reaches the bridge as
 * its own 'data' chunk. Echo (when on) repeats the command + CR before the handler runs, as a modem does.
 */
import type { DeviceSide, VirtualDevice } from '../../src/virtual-modem/virtual-link.js';

export type Input =
  { kind: 'command'; text: string } | { kind: 'text'; text: string } | { kind: 'cancel'; text: string };
export type Reply = string | Buffer | Array<string | Buffer> | undefined | void;
export type Handler = (input: Input, device: ScriptedDevice) => Reply;

export class ScriptedDevice implements VirtualDevice {
  present = true;
  echo: boolean;
  /** Everything received, in order (commands, message texts, cancels). */
  readonly received: Input[] = [];
  side: DeviceSide | undefined;
  private buf = '';
  private textMode = false;
  private sendChain: Promise<void> = Promise.resolve();

  constructor(
    private readonly handler: Handler,
    options: { echo?: boolean } = {},
  ) {
    this.echo = options.echo ?? false;
  }

  onAttach(side: DeviceSide): void {
    this.side = side;
  }

  onDetach(): void {
    this.side = undefined;
  }

  onWrite(chunk: Buffer): void {
    for (const ch of chunk.toString('latin1')) {
      if (this.textMode) {
        if (ch === '\x1a' || ch === '\x1b') {
          this.textMode = false;
          const text = this.buf;
          this.buf = '';
          if (this.echo && ch === '\x1a') void this.send(`${text}\x1a`);
          this.dispatch(ch === '\x1a' ? { kind: 'text', text } : { kind: 'cancel', text });
        } else {
          this.buf += ch;
        }
        continue;
      }
      if (ch === '\r') {
        const text = this.buf;
        this.buf = '';
        if (this.echo) void this.send(`${text}\r`);
        this.dispatch({ kind: 'command', text });
      } else if (ch === '\x1b') {
        this.received.push({ kind: 'cancel', text: '' });
      } else if (ch !== '\n') {
        this.buf += ch;
      }
    }
  }

  /**
   * Emits chunks, each one macrotask after the previous (so they arrive as separate reads); resolves one macrotask
   * after the last, when the bridge has read it.
   */
  send(...chunks: Array<string | Buffer>): Promise<void> {
    for (const c of [...chunks, undefined]) {
      this.sendChain = this.sendChain.then(
        () =>
          new Promise<void>((resolve) => {
            setImmediate(() => {
              if (c !== undefined) this.side?.emit(c);
              resolve();
            });
          }),
      );
    }
    return this.sendChain;
  }

  unplug(): void {
    this.present = false;
    this.side?.unplug();
  }

  private dispatch(input: Input): void {
    this.received.push(input);
    const reply = this.handler(input, this);
    if (reply === undefined) return;
    const chunks = Array.isArray(reply) ? reply : [reply];
    const last = chunks[chunks.length - 1];
    if (last !== undefined && last.toString().endsWith('> ')) this.textMode = true;
    void this.send(...chunks);
  }
}

/** The usual framing of a modem answer: `\r\n<line>\r\n` for each line. */
export function answer(...lines: string[]): string {
  return lines.map((l) => `\r\n${l}\r\n`).join('');
}
