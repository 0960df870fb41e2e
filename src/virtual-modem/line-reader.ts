/**
 * The virtual modem's input side: bytes -> echo, command lines (ending with CR; BS deletes), and the PDU typed after
 * the AT+CMGS prompt (up to Ctrl-Z to send or ESC to quit). With echo on every byte is echoed as received, and a
 * line or PDU is handed over only after its echo went out. Output only through host.send(); no timers here.
 */

const CTRL_Z = 0x1a;
const ESC = 0x1b;

export interface PduEntry {
  /** TPDU octets announced by AT+CMGS=<length>. */
  length: number;
  hex: string;
}

export interface LineReaderHost {
  echo(): boolean;
  send(text: string): void;
  /** A command line ended with CR (without the CR). */
  line(line: string): void;
  /** A PDU entry ended: Ctrl-Z (send true) or ESC (send false). */
  pdu(entry: PduEntry, send: boolean): void;
}

export class LineReader {
  private input = '';
  private pduEntry: PduEntry | undefined;

  constructor(private readonly host: LineReaderHost) {}

  /** Forgets a half-typed line and any PDU entry (power-up, link detached). */
  reset(): void {
    this.input = '';
    this.pduEntry = undefined;
  }

  /** Forgets a half-typed line (link attached). */
  clearLine(): void {
    this.input = '';
  }

  /** The next bytes are a PDU of this many TPDU octets (after the AT+CMGS prompt). */
  expectPdu(length: number): void {
    this.pduEntry = { length, hex: '' };
  }

  feed(chunk: Buffer): void {
    let echoed = '';
    const flushEcho = (): void => {
      if (echoed && this.host.echo()) this.host.send(echoed);
      echoed = '';
    };
    for (const byte of chunk) {
      const ch = String.fromCharCode(byte);
      if (this.pduEntry) {
        echoed += ch;
        if (byte === CTRL_Z || byte === ESC) {
          flushEcho();
          const entry = this.pduEntry;
          this.pduEntry = undefined;
          this.host.pdu(entry, byte === CTRL_Z);
        } else if (/[0-9A-Fa-f]/.test(ch)) this.pduEntry.hex += ch;
        continue;
      }
      echoed += ch;
      if (byte === 0x0d) {
        flushEcho();
        const line = this.input;
        this.input = '';
        this.host.line(line);
      } else if (byte === 0x08) this.input = this.input.slice(0, -1);
      else if (byte !== 0x0a) this.input += ch;
    }
    flushEcho();
  }
}
