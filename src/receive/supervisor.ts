/**
 * Keeps one modem alive: open the port -> AT channel -> modem init -> receiver; when the device vanishes (USB reset,
 * unplug) or the channel closes, stop the receiver and reconnect with backoff; when the modem reboots (CNMI lost),
 * re-run init and sweep. A SIM that needs a PIN/PUK or is missing is a state with a clear log line and a slow retry,
 * never a crash loop. Nothing here deletes anything: the receiver owns acknowledgement.
 * All AT work goes through the configured modem's scheduler (src/modem/scheduler.ts), which outlives the connections:
 * each session attaches its modem + channel to it and detaches them when the port closes (queued work then fails
 * fast). Init and re-init after a reboot run in exclusive mode (nothing interleaves with storage selection or CNMI);
 * the liveness probe is a maintenance task.
 * I/O is injected (connect/createModem/createReceiver) so tests drive it with the virtual modem.
 */
import type { AtChannel } from '../at/types.js';
import { BridgeError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { AtScheduler, SchedulerStatus } from '../modem/scheduler.js';
import type { Receiver } from './receiver.js';

export type ModemState = 'stopped' | 'connecting' | 'initialising' | 'running' | 'sim-not-ready' | 'disconnected' | 'failed';

export interface SupervisedModem {
  init(): Promise<ModemIdentityLike>;
  on(event: 'reboot', fn: () => void): unknown;
  off(event: 'reboot', fn: () => void): unknown;
  /** AT+CSQ and AT+CREG? (src/modem/modem.ts); sampled on some liveness ticks when present. */
  signal?(): Promise<{ rssi: number; dbm: number | undefined; bars: number }>;
  registration?(): Promise<{ stat: number; text: string; registered: boolean; source: string }>;
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

export interface SupervisorOptions<M extends SupervisedModem> {
  name: string;
  logger: Logger;
  /** The configured modem's scheduler: created once by the owner, kept across reconnects. */
  scheduler: AtScheduler<ModemHandle<M>>;
  connect(): Promise<AtChannel>;
  createModem(channel: AtChannel): M;
  /** The receiver must queue its work on `scheduler` (the same one as in these options). */
  createReceiver(modem: M, identity: ModemIdentityLike, scheduler: AtScheduler<ModemHandle<M>>): Receiver;
  /** Reconnect backoff: base doubling to max. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Retry interval while the SIM is not ready (PIN/PUK/absent). */
  simRetryMs?: number;
  /**
   * Liveness probe: `AT` every this many ms while running; after `livenessMisses` consecutive timeouts the modem is
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
  onStateChange?: (status: SupervisorStatus) => void;
}

export interface SupervisorStatus {
  name: string;
  state: ModemState;
  since: string;
  lastError: string | undefined;
  hint: string | undefined;
  reconnects: number;
  identity: ModemIdentityLike | undefined;
  receiver: Receiver['stats'] | undefined;
  /** Queue depth and the running task of the modem's scheduler. */
  scheduler: SchedulerStatus;
  /** Last sampled AT+CSQ (kept across reconnects, with its time). */
  signal?: { rssi: number; dbm: number | undefined; bars: number; sampledAt: string } | undefined;
  /** Last sampled AT+CREG? (AT+CEREG? on LTE-only modems). */
  registration?: { stat: number; text: string; registered: boolean; source: string; sampledAt: string } | undefined;
}

export class ModemSupervisor<M extends SupervisedModem> {
  private readonly o: SupervisorOptions<M>;
  private readonly log: Logger;
  private stopping = false;
  private loop: Promise<void> | undefined;
  /** Resolves when stop() is called: ends sleeps and the wait for a session's end. */
  private stopSignal: Promise<void> = Promise.resolve();
  private signalStop: () => void = () => undefined;
  private channel: AtChannel | undefined;
  private receiver: Receiver | undefined;
  private readonly statusValue: Omit<SupervisorStatus, 'scheduler'>;
  /** The configured modem's one scheduler of AT work (the daemon hands it to the control plane). */
  readonly scheduler: AtScheduler<ModemHandle<M>>;

  constructor(options: SupervisorOptions<M>) {
    this.o = options;
    this.log = options.logger.child({ modem: options.name });
    this.scheduler = options.scheduler;
    this.statusValue = {
      name: options.name, state: 'stopped', since: new Date().toISOString(), lastError: undefined, hint: undefined,
      reconnects: 0, identity: undefined, receiver: undefined,
    };
  }

  status(): SupervisorStatus {
    return {
      ...this.statusValue,
      receiver: this.receiver ? { ...this.receiver.stats } : this.statusValue.receiver,
      scheduler: this.scheduler.status(),
    };
  }

  /** The receiver of the current session (tests, benchmarks). */
  currentReceiver(): Receiver | undefined {
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
    this.signalStop();
    this.scheduler.detach('stopped');
    await this.receiver?.stop();
    await this.channel?.close().catch((err: unknown) => this.log.debug({ err }, 'closing the channel at stop failed (port already gone)'));
    await this.loop;
    this.loop = undefined;
    this.setState('stopped');
  }

  private setState(state: ModemState, error?: unknown): void {
    const changed = this.statusValue.state !== state;
    if (changed) this.statusValue.since = new Date().toISOString();
    this.statusValue.state = state;
    if (error !== undefined) {
      this.statusValue.lastError = errorMessage(error);
      this.statusValue.hint = error instanceof BridgeError ? error.hint : undefined;
    }
    if (changed || error !== undefined) this.o.onStateChange?.(this.status());
  }

  private async sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopSignal]);
    clearTimeout(timer);
  }

  private async run(): Promise<void> {
    const base = this.o.retryBaseMs ?? 1000;
    const max = this.o.retryMaxMs ?? 30_000;
    let failures = 0;
    while (!this.stopping) {
      let delay = Math.min(max, base * 2 ** Math.min(failures, 16));
      try {
        await this.session();
        failures = 0;
        delay = base;
      } catch (err) {
        failures++;
        const code = err instanceof BridgeError ? err.code : undefined;
        if (code === 'SIM_NOT_READY') {
          this.setState('sim-not-ready', err);
          delay = this.o.simRetryMs ?? 60_000;
        } else if (code === 'PORT_NOT_FOUND' || code === 'PORT_CLOSED' || code === 'PORT_BUSY' || code === 'PORT_PERMISSION') {
          this.setState('disconnected', err);
        } else {
          this.setState('failed', err);
        }
        if (this.stopping) break;
        const hint = err instanceof BridgeError && err.hint ? ` (hint: ${err.hint})` : '';
        this.log.error({ err, code, retryInMs: delay, attempt: failures }, `modem ${this.o.name}: ${errorMessage(err)}${hint}; retrying in ${Math.round(delay / 1000)} s`);
      } finally {
        await this.teardown();
      }
      if (this.stopping) break;
      this.statusValue.reconnects++;
      await this.sleep(delay);
    }
  }

  /** One connection: resolves when the port closes; rejects when it cannot be opened or initialised. */
  private async session(): Promise<void> {
    this.setState('connecting');
    const channel = await this.o.connect();
    this.channel = channel;
    const closed = new Promise<{ disconnected: boolean; error?: Error }>((resolve) => channel.once('close', resolve));
    if (this.stopping) return;
    this.setState('initialising');
    const modem = this.o.createModem(channel);
    this.scheduler.attach({ modem, channel });
    const identity = await this.scheduler.exclusive('init', () => modem.init());
    this.statusValue.identity = identity;
    this.log.info({ identity }, `modem ${this.o.name} ready: ${identity.manufacturer ?? '?'} ${identity.model ?? '?'} (profile ${identity.profile ?? '?'})`);
    const receiver = this.o.createReceiver(modem, identity, this.scheduler);
    this.receiver = receiver;
    let reinitialising = false;
    const onReboot = () => {
      if (reinitialising) return; // banners of the same reboot (RDY, SMS Ready, ...) each raise the event
      reinitialising = true;
      this.log.warn(`modem ${this.o.name} rebooted: re-initialising and sweeping`);
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
          this.log.error({ err }, `re-initialising ${this.o.name} after a reboot failed: ${errorMessage(err)}; reconnecting`);
          void channel.close();
        } finally {
          reinitialising = false;
        }
      })();
    };
    modem.on('reboot', onReboot);
    receiver.start();
    this.setState('running');
    this.sampleAtConnect(modem);
    const stopProbe = this.startLivenessProbe(channel, modem);
    const info = await Promise.race([closed, this.stopSignal.then(() => undefined)]);
    stopProbe();
    modem.off('reboot', onReboot);
    if (info && !this.stopping) {
      this.setState('disconnected', info.error ?? new Error(info.disconnected ? 'device vanished (USB reset or unplug)' : 'port closed'));
      this.log.warn({ disconnected: info.disconnected }, `modem ${this.o.name}: port closed${info.disconnected ? ' (device vanished)' : ''}; reconnecting`);
    }
  }

  /** See SupervisorOptions.livenessIntervalMs. Only timeouts count: an ERROR answer proves the modem is alive. */
  private startLivenessProbe(channel: AtChannel, modem: M): () => void {
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
      // Signal sampling replaces a probe tick (same command count): CSQ on tick `cycle`, CREG? half a cycle later.
      const sample = cycle > 0 ? (tick % cycle === 0 ? 'signal' : tick % cycle === Math.floor(cycle / 2) ? 'registration' : undefined) : undefined;
      const probe: () => Promise<unknown> =
        sample === 'signal' && modem.signal ? () => this.sampleSignal(modem)
        : sample === 'registration' && modem.registration ? () => this.sampleRegistration(modem)
        : () => channel.run('AT', { timeoutMs: this.o.livenessTimeoutMs ?? 5_000 });
      // A maintenance task: it waits for receive work (a modem busy answering is alive); the timeout counts only from
      // the moment `AT` is sent. A refusal (port closed, stopped) is not a timeout and is ignored below.
      this.scheduler
        .schedule({ priority: 'maintenance', label: sample ? `liveness probe (${sample})` : 'liveness probe (AT)' }, () => probe())
        .then(
          () => (misses = 0),
          (err: unknown) => {
            if (done || !(err instanceof BridgeError) || err.code !== 'AT_TIMEOUT') return;
            misses++;
            this.log.warn({ misses, limit }, `modem ${this.o.name} did not answer the liveness probe (${misses}/${limit})`);
            if (misses < limit) return;
            done = true;
            this.setState(
              'failed',
              new BridgeError('MODEM_SILENT', `modem ${this.o.name} stopped answering (${limit} probes timed out): reconnecting`, {
                hint: 'a modem that hangs repeatedly may need more power (a powered USB hub) or a firmware update',
              }),
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
        await this.sampleSignal(modem);
        await this.sampleRegistration(modem);
      })
      .catch((err: unknown) => this.log.debug({ err }, `sampling signal/registration at connect failed (sampled again on the probe cycle): ${errorMessage(err)}`));
  }

  /** AT+CSQ; a change of signal bars is logged. Errors other than a timeout propagate to the probe (ignored there). */
  private async sampleSignal(modem: M): Promise<void> {
    const q = await modem.signal!();
    const prev = this.statusValue.signal;
    this.statusValue.signal = { rssi: q.rssi, dbm: q.dbm, bars: q.bars, sampledAt: new Date().toISOString() };
    if (!prev || prev.bars !== q.bars) {
      this.log.info({ rssi: q.rssi, dbm: q.dbm, bars: q.bars, previousBars: prev?.bars }, `modem ${this.o.name}: signal ${q.dbm ?? 'unknown'} dBm (${q.bars}/5 bars)`);
    }
  }

  /** AT+CREG? (AT+CEREG? when CS is not registered); a change of registration status is logged (a loss as a warning). */
  private async sampleRegistration(modem: M): Promise<void> {
    const r = await modem.registration!();
    const prev = this.statusValue.registration;
    this.statusValue.registration = { stat: r.stat, text: r.text, registered: r.registered, source: r.source, sampledAt: new Date().toISOString() };
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
      this.statusValue.receiver = { ...receiver.stats };
      await receiver.stop();
    }
    this.receiver = undefined;
    const channel = this.channel;
    this.channel = undefined;
    if (channel?.isOpen) await channel.close().catch((err: unknown) => this.log.debug({ err }, 'close after session failed'));
  }
}
