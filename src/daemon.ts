/**
 * Composition root: the only place that creates I/O objects (spool, serial links, channels, modems, HTTP client,
 * virtual modems) and wires the stages:
 *   serial link -> AT channel -> modem -> receiver (decode, filter, multipart) -> spool -> forwarder -> webhook.
 * Start order: spool (recovery) -> forwarder -> modems; ready is signalled once the spool is open, because messages
 * already spooled can be delivered while modems connect. Stop order is the reverse; nothing in the spool is lost by
 * any stop: a POST abandoned at the grace bound leaves its record pending, and SMS not yet spooled stay on the SIM.
 */
import { readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AtChannel } from './at/types.js';
import type { Config, ModemConfig } from './config.js';
import { createSenderFilter } from './filter/sender.js';
import { Forwarder } from './forward/forwarder.js';
import { WebhookClient } from './forward/webhook.js';
import type { Logger } from './log.js';
import { errorMessage } from './errors.js';
import { createModem, openChannel } from './modem/factory.js';
import type { Modem } from './modem/modem.js';
import { Receiver, type ReceiveSpool } from './receive/receiver.js';
import { ModemSupervisor, type ModemHandle, type ModemIdentityLike, type SupervisorStatus } from './receive/supervisor.js';
import { AtScheduler } from './modem/scheduler.js';
import { createNotifier } from './sd-notify.js';
import { VirtualModem, type VirtualModemOptions } from './sim/virtual-modem.js';
import { Spool } from './spool/store.js';
import { PinMemoryFile } from './state/pin-memory.js';
import type { RejectedPins } from './modem/sim-unlock.js';

export const VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    return pkg.version;
  } catch {
    return '0.0.0';
  }
})();

export const USER_AGENT = `pulsa-bridge/${VERSION}`;

export const STATUS_INTERVAL_MS = 5_000;

export function statusFilePath(spoolDir: string): string {
  return join(spoolDir, 'status.json');
}

export interface DaemonOptions {
  config: Config;
  logger: Logger;
  /** Run every modem on the virtual modem, whatever the config says. */
  simulate?: boolean;
  /** Options for the virtual modems created for simulated modems (demo scripts, benchmarks). */
  virtualModem?: Partial<VirtualModemOptions>;
}

/** What the running daemon reports about itself (status.json, `pulsa-bridge status`). */
export interface DaemonStatus {
  version: string;
  startedAt: string;
  webhookUrl: string;
  modems: ModemStatus[];
  forwarder: ReturnType<Forwarder['stats']>;
}

/** A modem in status.json: its supervisor's status; the receiver counts carry `spooled` (records written to the spool). */
export type ModemStatus = Omit<SupervisorStatus, 'receiver'> & {
  receiver: (NonNullable<SupervisorStatus['receiver']> & { spooled: number }) | undefined;
};

/**
 * The receiver counts a record written to the spool as `forwarded`; status.json calls that count `spooled`, and keeps
 * `forwarded` (the same number) for one release, for readers of the old field.
 */
function withSpooledCount(s: SupervisorStatus): ModemStatus {
  return { ...s, receiver: s.receiver && { ...s.receiver, spooled: s.receiver.forwarded } };
}

export interface ModemWiring {
  spool: ReceiveSpool;
  logger: Logger;
  /** Serial path actually opened (the config's port, or the virtual modem's path). */
  path: string;
  /** 'mock': the virtual modem registered at `path` (the name the receive tests pass); 'native': the serial port. */
  binding: 'native' | 'mock';
  onStateChange?: () => void;
  /** Rejected SIM PINs, kept in the state directory (shared by every modem). */
  rejectedPins?: RejectedPins;
  /** Liveness probe interval (default 30 s); tests shorten it. */
  livenessIntervalMs?: number;
}

/**
 * Wires one configured modem: serial link -> AT channel -> Modem -> Receiver, under a supervisor that reconnects.
 * Exported so integration tests and benchmarks run exactly the production wiring (with their own spool).
 */
export function createModemSupervisor(m: ModemConfig, w: ModemWiring): ModemSupervisor<Modem> {
  const log = w.logger.child({ modem: m.name });
  const filter = createSenderFilter(m.senders);
  return new ModemSupervisor<Modem>({
    name: m.name,
    logger: w.logger,
    // One per configured modem, for the supervisor's whole life: every reconnect attaches its modem to it.
    scheduler: new AtScheduler<ModemHandle<Modem>>({ name: m.name }),
    ...(w.onStateChange ? { onStateChange: w.onStateChange } : {}),
    ...(w.livenessIntervalMs !== undefined ? { livenessIntervalMs: w.livenessIntervalMs, livenessTimeoutMs: Math.max(100, Math.floor(w.livenessIntervalMs / 2)) } : {}),
    connect: (): Promise<AtChannel> =>
      openChannel(
        { path: w.path, baudRate: m.baudRate, link: w.binding === 'mock' ? 'virtual' : 'native' },
        { logger: log.child({ stage: 'at' }), defaultTimeoutMs: m.commandTimeoutMs, name: m.name },
      ),
    createModem: (channel) =>
      createModem(channel, {
        name: m.name,
        logger: w.logger,
        ...(m.pin ? { pin: m.pin } : {}),
        ...(w.rejectedPins ? { rejectedPins: w.rejectedPins } : {}),
        profile: m.profile,
        storage: m.storage,
        delivery: m.delivery,
      }),
    createReceiver: (modem, identity: ModemIdentityLike, scheduler) =>
      new Receiver({
        modem,
        scheduler,
        spool: w.spool,
        sim: {
          modem: m.name,
          ...(identity.imsi ? { imsi: identity.imsi } : {}),
          ...(identity.iccid ? { iccid: identity.iccid } : {}),
          ...(identity.imei ? { imei: identity.imei } : {}),
        },
        accept: filter,
        otherSenders: m.otherSenders,
        multipartTimeoutMs: m.multipartTimeoutSec * 1000,
        sweepIntervalMs: m.sweepIntervalSec * 1000,
        logger: w.logger.child({ stage: 'receive' }),
        storageUsage: async () => {
          // Right after a sweep's listing the count is known without AT+CPMS? (idle budget, issue 11 item 2).
          const recent = modem.recentUsage(2_000);
          if (recent) return recent;
          // +CPMS? rows are mem1 (read/delete), mem2 (write), mem3 (receive): incoming SMS land in mem3.
          const rows = await modem.storageUsage();
          return rows[2] ?? rows[0];
        },
      }),
  });
}

export class Daemon {
  readonly spool: Spool;
  readonly forwarder: Forwarder;
  readonly supervisors: ModemSupervisor<Modem>[] = [];
  /** Virtual modems by modem name (only for simulated modems). */
  readonly virtualModems = new Map<string, VirtualModem>();
  private readonly o: DaemonOptions;
  private readonly startedAt = new Date().toISOString();
  private readonly url: string;
  private stopWatchdog: () => void = () => undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private statusTimer: NodeJS.Timeout | undefined;
  private writeStatus: (() => void) | undefined;
  private onSighup: (() => void) | undefined;
  private readonly rejectedPins: PinMemoryFile;

  private constructor(o: DaemonOptions, spool: Spool, forwarder: Forwarder, url: string) {
    this.o = o;
    this.spool = spool;
    this.forwarder = forwarder;
    this.url = url;
    this.rejectedPins = new PinMemoryFile(o.config.stateDir ?? o.config.spool.dir, o.logger.child({ stage: 'state' }));
  }

  static async start(o: DaemonOptions): Promise<Daemon> {
    const { config, logger } = o;
    const notifier = createNotifier(logger);
    // `pulsa-bridge queue retry|drop` changes the spool on disk and sends SIGHUP so the daemon re-reads it. The handler
    // must exist before the spool lock is taken: SIGHUP's default action would end the process.
    // A SIGHUP that arrives while Spool.open is still scanning may come after the scan read the changed area: it is
    // remembered and the spool is re-read as soon as it is open.
    let spoolRef: Spool | undefined;
    let sighupWhileOpening = false;
    let rescanning: Promise<void> = Promise.resolve();
    const onSighup = () => {
      if (!spoolRef) {
        sighupWhileOpening = true;
        logger.info('SIGHUP while the spool is being opened: it is re-read once open');
        return;
      }
      logger.info('SIGHUP: re-reading the spool (changed by the queue CLI)');
      const spoolNow = spoolRef;
      rescanning = rescanning.then(async () => {
        try {
          const r = await spoolNow.rescan();
          logger.info(r, 'spool re-read');
        } catch (err) {
          logger.error({ err }, `re-reading the spool failed: ${errorMessage(err)}`);
        }
      });
    };
    process.on('SIGHUP', onSighup);
    let spool: Spool;
    try {
      spool = await Spool.open(config.spool.dir, { logger: logger.child({ stage: 'spool' }), fsync: config.spool.fsync });
    } catch (err) {
      process.off('SIGHUP', onSighup);
      throw err;
    }
    spoolRef = spool;
    if (sighupWhileOpening) onSighup();
    const url = config.webhook.endpoint;
    for (const warning of config.warnings) logger.warn(warning);
    const client = new WebhookClient({
      url,
      timeoutMs: config.webhook.timeoutMs,
      connectTimeoutMs: config.webhook.connectTimeoutMs,
      headers: { ...config.webhook.headers },
      ...(config.webhook.hmacSecret ? { hmacSecret: config.webhook.hmacSecret } : {}),
      userAgent: USER_AGENT,
    });
    const policy = {
      baseDelayMs: config.webhook.retry.baseDelayMs,
      maxDelayMs: config.webhook.retry.maxDelayMs,
      ...(config.webhook.retry.maxAgeHours !== undefined ? { maxAgeMs: config.webhook.retry.maxAgeHours * 3_600_000 } : {}),
    };
    const forwarder = new Forwarder({ spool, client, policy, logger: logger.child({ stage: 'forward' }), strictOrder: config.webhook.strictOrder });
    const daemon = new Daemon(o, spool, forwarder, url);
    daemon.onSighup = onSighup;
    forwarder.start();
    for (const m of config.modems) daemon.startModem(m);
    daemon.startStatusFile();
    daemon.schedulePrune();
    const stats = await spool.stats();
    logger.info({ webhook: url, spool: config.spool.dir, modems: config.modems.map((m) => m.name), pending: stats.pending, dead: stats.dead }, `pulsa-bridge ${VERSION} started`);
    notifier.ready(`forwarding to ${url}; ${stats.pending} pending`);
    daemon.stopWatchdog = notifier.startWatchdog(() => true);
    return daemon;
  }

  private startModem(m: ModemConfig): void {
    const simulate = this.o.simulate === true || m.simulate;
    const path = simulate ? `/virtual/${m.name}` : m.port;
    if (simulate && !this.virtualModems.has(m.name)) {
      const vm = new VirtualModem({ path, profile: 'simcom', ...this.o.virtualModem, ...(m.pin ? { pin: m.pin } : {}) });
      vm.start();
      this.virtualModems.set(m.name, vm);
    }
    const supervisor = createModemSupervisor(m, {
      spool: this.spool,
      logger: this.o.logger,
      path,
      binding: simulate ? 'mock' : 'native',
      rejectedPins: this.rejectedPins,
      onStateChange: () => this.writeStatus?.(),
    });
    this.supervisors.push(supervisor);
    supervisor.start();
  }

  private schedulePrune(): void {
    const { spool: cfg } = this.o.config;
    const prune = async () => {
      try {
        const sent = await this.spool.prune('sent', cfg.sentRetentionDays);
        const ignored = await this.spool.prune('ignored', cfg.ignoredRetentionDays);
        if (sent + ignored > 0) this.o.logger.info({ sent, ignored }, 'pruned old audit records');
      } catch (err) {
        this.o.logger.error({ err }, 'pruning the spool failed (will try again in an hour)');
      }
    };
    void prune();
    this.pruneTimer = setInterval(() => void prune(), 3_600_000);
    this.pruneTimer.unref();
  }

  /**
   * Writes `status.json` in the spool directory every STATUS_INTERVAL_MS (atomically: tmp + rename) for
   * `pulsa-bridge status`. This timer is deliberately not unref'd: it keeps the process alive while the daemon runs,
   * even when no serial port handle does (virtual modems).
   */
  private startStatusFile(): void {
    const file = statusFilePath(this.o.config.spool.dir);
    let writing = false;
    const write = async () => {
      if (writing) return;
      writing = true;
      try {
        const body = JSON.stringify({ ...this.status(), pid: process.pid, writtenAt: new Date().toISOString() }, null, 2);
        await writeFile(`${file}.tmp`, body, { mode: 0o644 });
        await rename(`${file}.tmp`, file);
      } catch (err) {
        this.o.logger.warn({ err }, `could not write ${file}: ${errorMessage(err)} (pulsa-bridge status will be stale)`);
      } finally {
        writing = false;
      }
    };
    let again = false;
    const writeSoon = () => {
      if (writing) again = true;
      else void write().then(() => again && ((again = false), writeSoon()));
    };
    this.writeStatus = writeSoon;
    writeSoon();
    this.statusTimer = setInterval(writeSoon, STATUS_INTERVAL_MS);
  }

  status(): DaemonStatus {
    return {
      version: VERSION,
      startedAt: this.startedAt,
      webhookUrl: this.url,
      modems: this.supervisors.map((s) => withSpooledCount(s.status())),
      forwarder: this.forwarder.stats(),
    };
  }

  /** Stop reading, finish or abandon the POST in flight within the grace bound, close the ports. */
  async stop(): Promise<void> {
    const { logger, config } = this.o;
    this.stopWatchdog();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    if (this.statusTimer) clearInterval(this.statusTimer);
    await Promise.all(this.supervisors.map((s) => s.stop()));
    await this.forwarder.stop(config.shutdownGraceSec * 1000);
    await this.spool.close();
    await rm(statusFilePath(config.spool.dir), { force: true }).catch(() => undefined); // stale status is worse than none
    if (this.onSighup) process.off('SIGHUP', this.onSighup);
    for (const vm of this.virtualModems.values()) vm.stop();
    logger.info('pulsa-bridge stopped');
  }
}
