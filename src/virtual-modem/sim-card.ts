/**
 * The virtual modem's SIM card: state (ready, PIN, PUK, absent), PIN and PUK with their tries (3 and 10), AT+CPIN and
 * the families' try counters. Unlocking answers OK first, then the SIM turns ready. The SIM outlives reboot; a power
 * cycle locks a SIM with a PIN again. blockedError() is what a command needing the SIM gets while it is not ready.
 * No I/O and no timers here.
 */
import type { CommandEntry, ErrorSpec, Outcome } from './at-command.js';
import type { SimState } from './sim-profiles.js';
import type { VirtualModemOptions } from './virtual-modem-types.js';

const PIN_TRIES = 3;
const PUK_TRIES = 10;

export class SimCard {
  private simState: SimState;
  private pin: string | undefined;
  private pinTriesLeft = PIN_TRIES;
  private pukTriesLeft = PUK_TRIES;

  constructor(
    /** The options the modem was built with (pin and simState at start; puk read at each use). */
    private readonly opts: Pick<VirtualModemOptions, 'pin' | 'puk' | 'simState'>,
    private readonly onUnlocked: () => void,
  ) {
    this.pin = opts.pin;
    this.simState = opts.simState ?? (opts.pin !== undefined ? 'pin' : 'ready');
  }

  get state(): SimState {
    return this.simState;
  }

  get ready(): boolean {
    return this.simState === 'ready';
  }

  /** Power cycle: a SIM with a PIN asks for it again. */
  powerCycle(): void {
    if (this.pin !== undefined && this.simState === 'ready') this.simState = 'pin';
  }

  snapshot(): { simState: SimState; pinTriesLeft: number } {
    return { simState: this.simState, pinTriesLeft: this.pinTriesLeft };
  }

  restore(s: { simState: SimState; pinTriesLeft: number }): void {
    this.simState = s.simState;
    this.pinTriesLeft = s.pinTriesLeft;
  }

  /** The error for a command that needs an unlocked SIM, in the family asked for; undefined when the SIM is ready. */
  blockedError(family: 'cme' | 'cms'): ErrorSpec | undefined {
    if (this.simState === 'ready') return undefined;
    const cme = ({ absent: 10, pin: 11, puk: 12, ready: 0 } as const)[this.simState];
    const cms = ({ absent: 310, pin: 311, puk: 316, ready: 0 } as const)[this.simState];
    return family === 'cme' ? { cme } : { cms };
  }

  cpinQuery(): Outcome {
    const text = { ready: 'READY', pin: 'SIM PIN', puk: 'SIM PUK', absent: '' }[this.simState];
    if (this.simState === 'absent') return { error: { cme: 10 } };
    return { lines: [`+CPIN: ${text}`] };
  }

  cpinEnter(code: string, newPin: string | undefined): Outcome {
    if (this.simState === 'absent') return { error: { cme: 10 } };
    if (this.simState === 'ready') return { error: { cme: 3 } };
    if (this.simState === 'pin') {
      if (code !== this.pin) {
        this.pinTriesLeft--;
        if (this.pinTriesLeft <= 0) this.simState = 'puk';
        return { error: { cme: 16 } };
      }
      this.pinTriesLeft = PIN_TRIES;
      return { then: () => this.unlocked() };
    }
    // PUK state: AT+CPIN="<puk>","<new pin>"
    if (newPin === undefined || newPin === '') return { error: { cme: 12 } };
    if (code !== (this.opts.puk ?? '12345678')) {
      this.pukTriesLeft--;
      return { error: { cme: 16 } };
    }
    this.pin = newPin;
    this.pinTriesLeft = PIN_TRIES;
    this.pukTriesLeft = PUK_TRIES;
    return { then: () => this.unlocked() };
  }

  private unlocked(): void {
    this.simState = 'ready';
    this.onUnlocked();
  }

  /** The try-counter commands of the families that have them (sim-profiles.ts `extras`), in table order. */
  vendorCommands(extras: readonly string[]): CommandEntry[] {
    const entries: CommandEntry[] = [];
    const pinCounts = () => ({ pin: this.simState === 'puk' ? 0 : this.pinTriesLeft, puk: this.pukTriesLeft });
    if (extras.includes('cpinr')) {
      entries.push({
        pattern: /^\+CPINR(?:="?([A-Z0-9 ]*)"?)?$/i,
        run: () => ({
          lines: [`+CPINR: SIM PIN,${pinCounts().pin},${PIN_TRIES}`, `+CPINR: SIM PUK,${pinCounts().puk},${PUK_TRIES}`],
        }),
      });
    }
    if (extras.includes('simcom-spic')) {
      entries.push({
        pattern: /^\+SPIC$/i,
        run: () => ({ lines: [`+SPIC: ${pinCounts().pin},${pinCounts().puk},3,10`] }),
      });
    }
    if (extras.includes('huawei-cpin')) {
      entries.push({
        pattern: /^\^CPIN\?$/i,
        run: () => {
          const code = { ready: 'READY', pin: 'SIM PIN', puk: 'SIM PUK', absent: '' }[this.simState];
          if (this.simState === 'absent') return { error: { cme: 10 } };
          const current = this.simState === 'puk' ? pinCounts().puk : this.simState === 'pin' ? pinCounts().pin : '';
          return { lines: [`^CPIN: ${code},${current},${pinCounts().puk},${pinCounts().pin},10,3`] };
        },
      });
    }
    return entries;
  }
}
