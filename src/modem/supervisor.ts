/**
 * Keeps one modem connected: open the port -> AT channel -> init -> the session's receiver; when the device vanishes
 * or the channel closes, stop the receiver and reconnect (every replugPollMs for a while after a vanish, then with
 * backoff); when the modem resets (its boot banner, settings found gone by a probe), re-run init and ask for a sweep.
 * - A SIM that needs a PIN/PUK or is missing is a state with a hint and a slow retry, never a crash loop.
 * - All AT work goes through the configured modem's one scheduler, which outlives connections; init and re-init run
 *   exclusive; the liveness probe (a setting read back) is a maintenance task; two probe timeouts recycle the port.
 * - Receiver counts add up across sessions; the last error clears once the modem runs again; a retry is one log line.
 * - Deletes nothing (the receiver owns acknowledgement); knows the receiver only as SupervisedReceiver.
 */
import { RepeatedWarnings } from '../log/repeated.js';
import type { AtChannel } from '../at/types.js';
import { BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProbeOutcome } from './liveness.js';
import type { ProbeSample, Registration, SampledState, SignalQuality } from './modem.js';
import type { AtScheduler, SchedulerStatus } from './scheduler.js';

export type ModemState =
  'stopped' | 'connecting' | 'initialising' | 'running' | 'sim-not-ready' | 'disconnected' | 'failed';

export interface SupervisedModem {
  init(): Promise<ModemIdentityLike>;
  on(event: 'reboot' | 'reset-suspected', fn: (info: { urc?: string; reason?: string }) => void): unknown;
  off(event: 'reboot' | 'reset-suspected', fn: (info: { urc?: string; reason?: string }) => void): unknown;
  /** The liveness probe: reads a setting back. Without it the probe is a bare `AT`. */
  probeState?(options: { timeoutMs?: number; sample?: ProbeSample }): Promise<ProbeOutcome & SampledState>;
  /** AT+CSQ and AT+CREG? (src/modem/modem.ts): read once at connect, and registration again (with AT+CEREG? for
   * LTE-only modems) when the probe's CREG says unregistered. */
  signal?(): Promise<SignalQuality>;
  registration?(): Promise<Registration>;
}

/** Receiver counts that add up across sessions (the others are the current session's). */
const SUMMED = ['received', 'spooled', 'ignored', 'quarantined', 'duplicates', 'sweeps'] as const;

/** The counts a session's receiver keeps (src/receive/receiver.ts's stats have these and more). */
export type ReceiverCounts = Record<(typeof SUMMED)[number], number> & {
  lastSweepAt: string | undefined;
  lastError: string | undefined;
};

/** What the supervisor needs of the receiver it runs on each connection (src/receive/receiver.ts satisfies it). */
export interface SupervisedReceiver<S extends ReceiverCounts = ReceiverCounts> {
  start(): void;
  stop(): Promise<void>;
  requestSweep(reason: string): void;
  readonly stats: S;
}

export interface ModemIdentityLike {
  imsi?: string | undefined;
  iccid?: string | undefined;
  imei?: string | undefined;
  manufacturer?: string | undefined;
  model?: string | undefined;
  profile?: string | undefined;
}

/** What a session attaches to the modem's scheduler: tasks reach the modem (and, for raw commands, its channel). */
export interface ModemHandle<M> {
  readonly modem: M;
  readonly channel: AtChannel;
}

export interface SupervisorOptions<M extends SupervisedModem, R extends SupervisedReceiver> {
  name: string;
  logger: Logger;
  /** The configured modem's scheduler: created once by the owner, kept across reconnects. */
  scheduler: AtScheduler<ModemHandle<M>>;
  connect(): Promise<AtChannel>;
  createModem(channel: AtChannel): M;
  /** The receiver must queue its work on `scheduler` (the same one as in these options). */
  createReceiver(modem: M, identity: ModemIdentityLike, scheduler: AtScheduler<ModemHandle<M>>): R;
  /** Reconnect backoff: base doubling to max. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Retry interval while the SIM is not ready (PIN/PUK/absent). */
  simRetryMs?: number;
  /** After the device vanished: reopen every this many ms (default 250) for replugWindowMs (default 30 s), then back off. */
  replugPollMs?: number;
  replugWindowMs?: number;
  /**
   * Checks of a suspected reset that may find the settings intact per minute (default 3): the trailing banners of a
   * boot just handled cost one check, a URC that keeps coming (noise) cannot become steady traffic.
   */
  suspectChecksPerMinute?: number;
  /**
   * Liveness probe (Modem.probeState: a setting read back, e.g. AT+CNMI?) every this many ms while running; settings
   * found gone mean a silent reset: re-init and sweep. After `livenessMisses` consecutive timeouts the modem is
   * taken as hung (port open, firmware not answering) and the connection is recycled: close, reopen, init, sweep.
   * Default 30 s; 0 disables.
   */
  livenessIntervalMs?: number;
  livenessTimeoutMs?: number;
  livenessMisses?: number;
  /**
   * Signal and registration sampling within the idle AT budget: on every `signalEveryTicks`-th liveness tick the probe
   * is AT+CSQ instead of `AT`, and half a cycle later AT+CREG? (an answer proves liveness too; a timeout counts as a
   * miss). Default 6: with the 30 s probe each is sampled every 3 minutes, with no command added. 0 disables.
   */
  signalEveryTicks?: number;
  /** Called after every state change (the daemon refreshes its status file). */
  onStateChange?: (status: SupervisorStatus<R['stats']>) => void;
}

export interface SupervisorStatus<S extends ReceiverCounts = ReceiverCounts> {
  name: string;
  state: ModemState;
  since: string;
  /**
   * While not running: since when the modem is down (when it was last running, or when the daemon started), kept across
   * the retries' state changes. Undefined while it runs.
   */
  downSince?: string | undefined;
  lastError: string | undefined;
  hint: string | undefined;
  /** Connections re-established after one that ran (not the first, not failed attempts). */
  reconnects: number;
  /** Attempts to connect or initialise that failed. */
  failedAttempts: number;
  identity: ModemIdentityLike | undefined;
  receiver: S | undefined;
  /** Queue depth and the running task of the modem's scheduler. */
  scheduler: SchedulerStatus;
  /** Last sampled AT+CSQ (kept across reconnects, with its time). */
  signal?: { rssi: number; dbm: number | undefined; bars: number; sampledAt: string } | undefined;
  /** Last sampled AT+CREG? (AT+CEREG? on LTE-only modems). */
  registration?: { stat: number; text: string; registered: boolean; source: string; sampledAt: string } | undefined;
}

export class ModemSupervisor<M extends SupervisedModem, R extends SupervisedReceiver = SupervisedReceiver> {
  private readonly o: SupervisorOptions<M, R>;
  private readonly log: Logger;
  private stopping = false;
  private loop: Promise<void> | undefined;
  /** Resolves when stop() is called: ends sleeps and the wait for a session's end. */
  private stopSignal: Promise<void> = Promise.resolve();
  private signalStop: () => void = () => undefined;
  private channel: AtChannel | undefined;
  private receiver: R | undefined;
  private readonly statusValue: Omit<SupervisorStatus<R['stats']>, 'scheduler'>;
  /** Receiver counts of the sessions that ended. */
  private earlier: R['stats'] | undefined;
  /** The configured modem's one scheduler of AT work (the daemon hands it to the control plane). */
  readonly scheduler: AtScheduler<ModemHandle<M>>;

  /** A connection ran before (the next one that runs is a reconnect). */
  private ranBefore = false;
  /** Connect errors, summarised when the same one repeats. */
  private readonly repeated: RepeatedWarnings;

  constructor(options: SupervisorOptions<M, R>) {
    this.o = options;
    this.log = options.logger.child({ modem: options.name });
    this.repeated = new RepeatedWarnings((line) => this.log.error(line), 10 * 60_000);
    this.scheduler = options.scheduler;
    this.statusValue = {
      name: options.name,
      state: 'stopped',
      since: new Date().toISOString(),
      downSince: new Date().toISOString(),
      lastError: undefined,
      hint: undefined,
      reconnects: 0,
      failedAttempts: 0,
      identity: undefined,
      receiver: undefined,
    };
  }

  status(): SupervisorStatus<R['stats']> {
    return {
      ...this.statusValue,
      receiver: this.receiverTotals(),
      scheduler: this.scheduler.status(),
    };
  }

  /** The current receiver's counts plus those of earlier sessions (a reconnect does not reset them). */
  private receiverTotals(): R['stats'] | undefined {
    const now = this.receiver?.stats;
    const before = this.earlier;
    if (!now) return before && { ...before };
    if (!before) return { ...now };
    const total = {
      ...now,
      lastSweepAt: now.lastSweepAt ?? before.lastSweepAt,
      lastError: now.lastError ?? before.lastError,
    };
    for (const k of SUMMED) total[k] = now[k] + before[k];
    return total;
  }

  /** The receiver of the current session (tests, benchmarks). */
  currentReceiver(): R | undefined {
    return this.receiver;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.stopSignal = new Promise<void>((resolve) => (this.signalStop = resolve));
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.repeated.flush();
    this.signalStop();
    this.scheduler.detach('stopped');
    await this.receiver?.stop();
    await this.channel
      ?.close()
      .catch((err: unknown) => this.log.debug({ err }, 'closing the channel at stop failed (port already gone)'));
    await this.loop;
    this.loop = undefined;
    this.setState('stopped');
  }

  private setState(state: ModemState, error?: unknown): void {
    const changed = this.statusValue.state !== state;
    const now = new Date().toISOString();
    if (changed) this.statusValue.since = now;
    if (state === 'running') {
      // A connection re-established after one that ran counts; the first one, and failed attempts, do not.
      if (changed && this.ranBefore) this.statusValue.reconnects++;
      this.ranBefore = true;
      this.statusValue.downSince = undefined;
    } else if (this.statusValue.downSince === undefined) {
      this.statusValue.downSince = now;
    }
    this.statusValue.state = state;
    if (error !== undefined) {
      this.statusValue.lastError = errorMessage(error);
      this.statusValue.hint = error instanceof BridgeError ? error.hint : undefined;
    }
    let cleared = false;
    if (error === undefined && state === 'running' && this.statusValue.lastError !== undefined) {
      // Healthy again: an old error would only mislead `pulsa-bridge status`.
      this.statusValue.lastError = undefined;
      this.statusValue.hint = undefined;
      cleared = true;
    }
    if (changed || error !== undefined || cleared) this.o.onStateChange?.(this.status());
  }

  private async sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopSignal]);
    clearTimeout(timer);
  }

  private async run(): Promise<void> {
    const base = this.o.retryBaseMs ?? 1000;
    const max = this.o.retryMaxMs ?? 30_000;
    const replugPoll = this.o.replugPollMs ?? 250;
    const replugWindow = this.o.replugWindowMs ?? 30_000;
    /** When the device last vanished (USB unplug or reset): until replugWindow later, reopening is tried every replugPoll. */
    let vanishedAt: number | undefined;
    const replugging = () => vanishedAt !== undefined && performance.now() - vanishedAt < replugWindow;
    let failures = 0;
    while (!this.stopping) {
      let delay = Math.min(max, base * 2 ** Math.min(failures, 16));
      try {
        const ended = await this.session();
        failures = 0;
        delay = base;
        if (ended?.disconnected) {
          vanishedAt = performance.now();
          delay = replugPoll;
        }
      } catch (err) {
        failures++;
        this.statusValue.failedAttempts++;
        const code = err instanceof BridgeError ? err.code : undefined;
        const portGone =
          code === 'PORT_NOT_FOUND' || code === 'PORT_CLOSED' || code === 'PORT_BUSY' || code === 'PORT_PERMISSION';
        if (code === 'SIM_NOT_READY') {
          this.setState('sim-not-ready', err);
          delay = this.o.simRetryMs ?? 60_000;
        } else if (portGone) {
          this.setState('disconnected', err);
          if (replugging()) delay = replugPoll;
        } else {
          this.setState('failed', err);
          // A modem that vanished and came back but does not answer yet (still booting): soon, not after a long backoff.
          if (replugging()) delay = Math.min(delay, base);
        }
        if (this.stopping) break;
        const hint = err instanceof BridgeError && err.hint ? ` (hint: ${err.hint})` : '';
        const line = `modem ${this.o.name}: ${errorMessage(err)}${hint}; retrying in ${delay < 1000 ? `${delay} ms` : `${Math.round(delay / 1000)} s`}`;
        // The same error again (a missing port, retried for hours) is summarised: one line per cause per 10 minutes with
        // a count; a replug polls every replugPoll, and a stack says nothing an operator can act on.
        if (portGone && replugging() && failures > 1)
          this.log.debug({ code, retryInMs: delay, attempt: failures }, line);
        else this.repeated.note(`${code ?? ''}:${errorMessage(err)}`, line);
        this.log.debug({ err }, 'the error behind the retry above');
      } finally {
        await this.teardown();
      }
      if (this.stopping) break;
      await this.sleep(delay);
    }
  }

  /** One connection: resolves when the port closes (how it closed); rejects when it cannot be opened or initialised. */
  private async session(): Promise<{ disconnected: boolean } | undefined> {
    this.setState('connecting');
    const channel = await this.o.connect();
    this.channel = channel;
    const closed = new Promise<{ disconnected: boolean; error?: Error }>((resolve) => channel.once('close', resolve));
    if (this.stopping) return undefined;
    this.setState('initialising');
    const modem = this.o.createModem(channel);
    this.scheduler.attach({ modem, channel });
    const identity = await this.scheduler.exclusive('init', () => modem.init());
    this.statusValue.identity = identity;
    this.log.info(
      { identity },
      `modem ${this.o.name} ready: ${identity.manufacturer ?? '?'} ${identity.model ?? '?'} (profile ${identity.profile ?? '?'})`,
    );
    const receiver = this.o.createReceiver(modem, identity, this.scheduler);
    this.receiver = receiver;
    let reinitialising = false;
    const reinitialise = (why: string) => {
      if (reinitialising) return; // banners of the same reboot (RDY, SMS Ready, ...) each raise the event
      reinitialising = true;
      this.log.warn({ why }, `modem ${this.o.name} rebooted (${why}): re-initialising and sweeping`);
      this.setState('initialising');
      void (async () => {
        try {
          // No other command may interleave with init (storage selection, CNMI): exclusive, after the task in progress.
          await this.scheduler.exclusive('re-init after reboot', async () => {
            try {
              await modem.init();
            } catch (err) {
              // Nothing queued may run on a modem left half-initialised: it all fails now, the port is reopened below.
              this.scheduler.detach('re-initialisation failed');
              throw err;
            }
          });
          this.setState('running');
          receiver.requestSweep('modem reboot');
        } catch (err) {
          this.log.error(
            { code: err instanceof BridgeError ? err.code : undefined },
            `re-initialising ${this.o.name} after a reboot failed: ${errorMessage(err)}; reconnecting`,
          );
          this.log.debug({ err }, 'the error behind the reconnect above');
          void channel.close();
        } finally {
          reinitialising = false;
        }
      })();
    };
    const probe = this.prober(modem, reinitialise);
    const onReboot = (info: { urc?: string }) => reinitialise(`boot banner ${info.urc ?? ''}`.trim());
    let checking = false;
    /** When recent checks found the settings intact (false alarms), for suspectChecksPerMinute. */
    const falseAlarms: number[] = [];
    const onSuspect = (info: { reason?: string }) => {
      const now = performance.now();
      while (falseAlarms.length > 0 && now - falseAlarms[0]! > 60_000) falseAlarms.shift();
      if (reinitialising || checking || falseAlarms.length >= (this.o.suspectChecksPerMinute ?? 3)) return;
      checking = true;
      void probe(`suspected reset: ${info.reason ?? '?'}`)
        .then((outcome) => outcome.settings !== 'lost' && falseAlarms.push(performance.now()))
        .catch((err: unknown) => {
          // A timeout or a closed port: the liveness probe (timeouts) and the close handler (port) take it from here.
          this.log.debug({ err }, 'checking a suspected reset failed');
        })
        .finally(() => (checking = false));
    };
    modem.on('reboot', onReboot);
    modem.on('reset-suspected', onSuspect);
    receiver.start();
    this.setState('running');
    this.sampleAtConnect(modem);
    const stopProbe = this.startLivenessProbe(channel, probe);
    const info = await Promise.race([closed, this.stopSignal.then(() => undefined)]);
    stopProbe();
    modem.off('reboot', onReboot);
    modem.off('reset-suspected', onSuspect);
    if (info && !this.stopping) {
      this.setState(
        'disconnected',
        info.error ?? new Error(info.disconnected ? 'device vanished (USB reset or unplug)' : 'port closed'),
      );
      this.log.warn(
        { disconnected: info.disconnected },
        `modem ${this.o.name}: port closed${info.disconnected ? ' (device vanished)' : ''}; reconnecting`,
      );
    }
    return info;
  }

  /**
   * The state probe as a maintenance task: reads a setting back (or sends `AT` when the modem cannot) and re-initialises
   * when the settings are gone. Resolves with the outcome; rejects on a timeout (AT_TIMEOUT) or a refusal.
   */
  private prober(
    modem: M,
    reinitialise: (why: string) => void,
  ): (why: string, sample?: ProbeSample) => Promise<ProbeOutcome> {
    const timeoutMs = this.o.livenessTimeoutMs ?? 5_000;
    return async (why, sample) => {
      const outcome = await this.scheduler.schedule(
        { priority: 'maintenance', label: `state probe (${why}${sample ? `, ${sample}` : ''})` },
        async ({ target }) => {
          if (modem.probeState) return modem.probeState({ timeoutMs, ...(sample ? { sample } : {}) });
          await target.channel.run('AT', { timeoutMs });
          return { settings: 'unknown', detail: 'AT -> OK' } satisfies ProbeOutcome;
        },
      );
      if (outcome.signal) this.recordSignal(outcome.signal);
      if (outcome.registration) {
        // CS not registered: an LTE-only modem may still be registered on EPS (one more read, only in that state).
        const r =
          !outcome.registration.registered && modem.registration
            ? await modem.registration().catch(() => outcome.registration!)
            : outcome.registration;
        this.recordRegistration(r);
      }
      if (outcome.settings === 'lost') reinitialise(`settings gone: ${outcome.detail}`);
      else this.log.debug({ why, ...outcome }, 'state probe');
      return outcome;
    };
  }

  /**
   * See SupervisorOptions.livenessIntervalMs. Only timeouts count as misses: an ERROR answer proves the modem is alive.
   * Idle traffic is one probe per interval.
   */
  private startLivenessProbe(
    channel: AtChannel,
    probe: (why: string, sample?: ProbeSample) => Promise<ProbeOutcome>,
  ): () => void {
    const every = this.o.livenessIntervalMs ?? 30_000;
    if (every <= 0) return () => undefined;
    const limit = this.o.livenessMisses ?? 2;
    const cycle = this.o.signalEveryTicks ?? 6;
    let misses = 0;
    let probing = false;
    let done = false;
    let tick = 0;
    const timer = setInterval(() => {
      if (probing || done) return;
      probing = true;
      tick++;
      // Signal and registration ride on the probe's own AT line (`AT+CNMI?;+CSQ`: no extra command): CSQ on tick
      // `cycle`, CREG? half a cycle later.
      const sample: ProbeSample | undefined =
        cycle > 0
          ? tick % cycle === 0
            ? 'signal'
            : tick % cycle === Math.floor(cycle / 2)
              ? 'registration'
              : undefined
          : undefined;
      // A maintenance task: it waits for receive work (a modem busy answering is alive); the timeout counts only from
      // the moment the probe is sent. A refusal (port closed, stopped) is not a timeout and is ignored below.
      probe('liveness', sample)
        .then(
          () => (misses = 0),
          (err: unknown) => {
            if (done || !(err instanceof BridgeError) || err.code !== 'AT_TIMEOUT') return;
            misses++;
            this.log.warn(
              { misses, limit },
              `modem ${this.o.name} did not answer the liveness probe (${misses}/${limit})`,
            );
            if (misses < limit) return;
            done = true;
            this.setState(
              'failed',
              new BridgeError(
                'MODEM_SILENT',
                `modem ${this.o.name} stopped answering (${limit} probes timed out): reconnecting`,
                {
                  hint: 'a modem that hangs repeatedly may need more power (a powered USB hub) or a firmware update',
                },
              ),
            );
            this.log.error(`modem ${this.o.name} stopped answering: closing the port to reconnect and re-initialise`);
            void channel.close();
          },
        )
        .finally(() => (probing = false));
    }, every);
    return () => {
      done = true;
      clearInterval(timer);
    };
  }

  /** Signal and registration once per connection (not idle work), so status and metrics have them at once. */
  private sampleAtConnect(modem: M): void {
    if ((this.o.signalEveryTicks ?? 6) <= 0 || !modem.signal || !modem.registration) return;
    this.scheduler
      .schedule({ priority: 'maintenance', label: 'signal and registration (connect)' }, async () => {
        this.recordSignal(await modem.signal!());
        this.recordRegistration(await modem.registration!());
      })
      .catch((err: unknown) =>
        this.log.debug(
          { err },
          `sampling signal/registration at connect failed (sampled again on the probe cycle): ${errorMessage(err)}`,
        ),
      );
  }

  /** A signal sample (AT+CSQ); a change of signal bars is logged. */
  private recordSignal(q: SignalQuality): void {
    const prev = this.statusValue.signal;
    this.statusValue.signal = { rssi: q.rssi, dbm: q.dbm, bars: q.bars, sampledAt: new Date().toISOString() };
    if (!prev || prev.bars !== q.bars) {
      this.log.info(
        { rssi: q.rssi, dbm: q.dbm, bars: q.bars, previousBars: prev?.bars },
        `modem ${this.o.name}: signal ${q.dbm ?? 'unknown'} dBm (${q.bars}/5 bars)`,
      );
    }
  }

  /** A registration sample (AT+CREG?, or AT+CEREG?); a change of registration status is logged (a loss as a warning). */
  private recordRegistration(r: Registration): void {
    const prev = this.statusValue.registration;
    this.statusValue.registration = {
      stat: r.stat,
      text: r.text,
      registered: r.registered,
      source: r.source,
      sampledAt: new Date().toISOString(),
    };
    if (!prev || prev.stat !== r.stat) {
      const msg = `modem ${this.o.name}: network registration ${r.text} (${r.source} ${r.stat})${prev ? `, was ${prev.text}` : ''}`;
      if (r.registered) this.log.info({ registration: r }, msg);
      else this.log.warn({ registration: r }, msg);
    }
  }

  private async teardown(): Promise<void> {
    this.scheduler.detach(this.stopping ? 'stopped' : 'port closed');
    const receiver = this.receiver;
    if (receiver) {
      await receiver.stop();
      this.earlier = this.receiverTotals();
      this.statusValue.receiver = this.earlier;
    }
    this.receiver = undefined;
    const channel = this.channel;
    this.channel = undefined;
    if (channel?.isOpen)
      await channel.close().catch((err: unknown) => this.log.debug({ err }, 'close after session failed'));
  }
}
