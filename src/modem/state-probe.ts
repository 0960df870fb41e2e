/**
 * The liveness probe of one modem: one command that reads back a setting init applied (AT+CNMI?, else AT+CMEE?, else
 * plain AT), optionally with a signal or registration sample on the same line. It remembers, per session, which
 * queries this firmware answers and refuses, so a query that answered before and now fails means the settings were
 * lost (a restart), and a refused one is not asked again.
 */
import type { AtChannel } from '../at/types.js';
import { AtCommandError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModemAt } from './commands.js';
import { describeFinal } from './error-codes.js';
import type { InitState } from './init.js';
import { judgeCmee, judgeCnmi, type ProbeOutcome } from './liveness.js';
import { parseCsq, parseRegistrationQuery, type Registration, type SignalQuality } from './parse.js';

/** What a liveness probe may sample on the same AT line as its state read (signal or registration, for health). */
export type ProbeSample = 'signal' | 'registration';
export interface SampledState {
  signal?: SignalQuality;
  registration?: Registration;
}

function sampled(kind: ProbeSample, lines: readonly string[]): SampledState {
  if (kind === 'signal') {
    const q = parseCsq(lines);
    return q ? { signal: q } : {};
  }
  const r = parseRegistrationQuery(lines, 'CREG');
  return r ? { registration: r } : {};
}

export interface StateProbeOptions {
  channel: AtChannel;
  at: Pick<ModemAt, 'rethrowIfGone'>;
  log: Logger;
}

export class StateProbe {
  /** Probe commands that answered once in this session (an ERROR from one of them later means a restart). */
  private readonly probeAnswered = new Set<string>();
  /** Probe commands this firmware refuses (the probe falls back to the next one). */
  private readonly probeRefused = new Set<string>();
  /** Probe commands this firmware refuses with a sample on the same line (`AT+CNMI?;+CSQ`): sampled on their own. */
  private readonly combinedRefused = new Set<string>();

  constructor(private readonly o: StateProbeOptions) {}

  /** A new session (init): what answered before is forgotten; what the firmware refuses stays known. */
  newSession(): void {
    this.probeAnswered.clear();
  }

  /**
   * The liveness probe (one command): reads back a setting init applied, AT+CNMI? (the one that matters: without it
   * no +CMTI comes) or else AT+CMEE?, or plain AT when the firmware refuses both. A timeout rejects (AT_TIMEOUT).
   */
  async probe(
    state: Pick<InitState, 'cnmi' | 'cmee'>,
    options: { timeoutMs?: number; sample?: ProbeSample } = {},
  ): Promise<ProbeOutcome & SampledState> {
    const candidates: Array<[string, (lines: readonly string[]) => ProbeOutcome['settings']]> = [];
    const cnmi = state.cnmi;
    if (cnmi !== undefined) candidates.push(['AT+CNMI?', (lines) => judgeCnmi(lines, cnmi)]);
    const cmee = state.cmee;
    if (cmee !== undefined) candidates.push(['AT+CMEE?', (lines) => judgeCmee(lines, cmee)]);
    const run = options.timeoutMs === undefined ? undefined : { timeoutMs: options.timeoutMs };
    const extra = options.sample === 'signal' ? '+CSQ' : options.sample === 'registration' ? '+CREG?' : undefined;
    for (const [command, judge] of candidates) {
      if (this.probeRefused.has(command)) continue;
      let lines: readonly string[];
      try {
        if (extra && !this.combinedRefused.has(command)) {
          // One line, one command against the idle budget: the setting read back and the sample (`AT+CNMI?;+CSQ`).
          try {
            const both = (
              await this.o.channel.run(`${command};${extra}`, {
                ...run,
                responsePrefixes: [command.slice(2, -1), extra.replace('?', '')],
              })
            ).lines;
            const outcome = { settings: judge(both), detail: `${command};${extra} -> ${both.join(' | ') || 'OK'}` };
            if (outcome.settings === 'intact') this.probeAnswered.add(command);
            return { ...outcome, ...sampled(options.sample!, both) };
          } catch (err) {
            this.o.at.rethrowIfGone(err);
            if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
            // The combined line was refused: probe alone below, and from now on sample on its own line.
            this.o.log.info(
              { command: `${command};${extra}`, final: err.final },
              'liveness probe: the modem refuses a sample on the probe line; sampling on its own line',
            );
            this.combinedRefused.add(command);
          }
        }
        lines = (await this.o.channel.run(command, run)).lines;
      } catch (err) {
        this.o.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
        if (this.probeAnswered.has(command))
          return { settings: 'lost', detail: `${command} answered ${describeFinal(err.final)} (it answered before)` };
        this.o.log.info(
          { command, final: err.final },
          'liveness probe: the modem refuses this query; using the next one',
        );
        this.probeRefused.add(command);
        continue;
      }
      const settings = judge(lines);
      if (settings === 'intact') this.probeAnswered.add(command);
      const outcome = { settings, detail: `${command} -> ${lines.join(' | ') || 'OK'}` };
      if (!extra) return outcome;
      // The sample on its own line: one more command, on sample ticks only; its refusal does not fail the probe.
      try {
        const alone = await this.sampleAlone(extra, run);
        return { ...outcome, detail: `${outcome.detail}; ${alone.detail}`, ...alone.state };
      } catch (err) {
        this.o.at.rethrowIfGone(err);
        if (!(err instanceof AtCommandError) || err.code === 'AT_TIMEOUT') throw err;
        return { ...outcome, detail: `${outcome.detail}; AT${extra} answered ${describeFinal(err.final)}` };
      }
    }
    if (extra) {
      const alone = await this.sampleAlone(extra, run);
      return {
        settings: 'unknown',
        detail: `${alone.detail} (no setting can be read back on this modem)`,
        ...alone.state,
      };
    }
    await this.o.channel.run('AT', run);
    return { settings: 'unknown', detail: 'AT -> OK (no setting can be read back on this modem)' };
  }

  /** The probe's sample (`AT+CSQ` or `AT+CREG?`) on its own line. */
  private async sampleAlone(
    extra: string,
    run: { timeoutMs: number } | undefined,
  ): Promise<{ detail: string; state: SampledState }> {
    const lines = (await this.o.channel.run(`AT${extra}`, { ...run, responsePrefixes: [extra.replace('?', '')] }))
      .lines;
    return {
      detail: `AT${extra} -> ${lines.join(' | ')}`,
      state: sampled(extra === '+CSQ' ? 'signal' : 'registration', lines),
    };
  }
}
