/**
 * Noise URCs: the unsolicited lines a family prints on its own, sent every `intervalMs` and, with
 * `midResponseProbability`, slipped between a response's lines and its final result. Seeded: the same seed gives the
 * same noise. None for quiet families, with `noise: false` or after AT^CURC=0. The timer is unref'd; lines go through
 * host.urc(), so a stalled modem drops them.
 */
import { prng } from './prng.js';
import type { SimProfile } from './sim-profiles.js';
import type { VirtualModemOptions } from './virtual-modem-types.js';

export interface NoiseHost {
  readonly profile: SimProfile;
  /** The options the modem was built with (noise is read at each use). */
  readonly opts: Pick<VirtualModemOptions, 'noise'>;
  /** Unsolicited result codes are on (AT^CURC). */
  curc(): boolean;
  urc(line: string): void;
}

export class NoiseSource {
  private readonly random: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly host: NoiseHost) {
    const noise = host.opts.noise === false ? undefined : host.opts.noise;
    this.random = prng(noise?.seed ?? 1);
  }

  /** (Re)starts the periodic noise. */
  start(): void {
    this.stop();
    const noise = this.host.opts.noise === false ? undefined : (this.host.opts.noise ?? {});
    const interval = noise?.intervalMs ?? 1000;
    if (!noise || this.host.profile.noiseUrcs.length === 0 || interval <= 0) return;
    this.timer = setInterval(() => {
      const line = this.pick();
      if (line) this.host.urc(line);
    }, interval);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The noise URC to slip into a response that has information lines, or undefined (most of the time). */
  midResponse(): string | undefined {
    const p = this.host.opts.noise === false ? 0 : (this.host.opts.noise?.midResponseProbability ?? 0.25);
    return this.host.profile.noiseUrcs.length > 0 && this.random() < p ? this.pick() : undefined;
  }

  private pick(): string | undefined {
    if (!this.host.curc() || this.host.opts.noise === false) return undefined;
    const urcs = this.host.profile.noiseUrcs;
    return urcs[Math.floor(this.random() * urcs.length)];
  }
}
