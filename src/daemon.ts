/**
 * Composition root: the only place that creates I/O objects (spool, serial links, channels, modems, HTTP client,
 * virtual modems) and wires the stages:
 *   serial link -> AT channel -> modem -> receiver (decode, filter, multipart) -> spool -> forwarder -> webhook.
 * Start order: spool (recovery) -> forwarder -> modems -> control socket; ready is signalled once the spool is open,
 * because messages already spooled can be delivered while modems connect. Stop order is the reverse; nothing in the
 * spool is lost by any stop: a POST abandoned at the grace bound leaves its record pending, and SMS not yet spooled
 * stay on the SIM.
 * The control socket (src/control/, config `control`) is wired here: requests go to the dispatcher, which queues them
 * on the modems' schedulers; events go out to subscribed clients: `sms` (a record spooled: id, modem, sender, text),
 * `delivery` (a POST's result: id, status, outcome) and `urc` (the modems' unsolicited lines). A socket that cannot be
 * opened is logged and the daemon runs on without it: diagnostics never stop SMS.
 * USSD: each modem has one UssdSessions (one session per modem), shared by the operators' `ussd.*` requests and the
 * balance checks (periodic and on demand); a session holds the modem's scheduler only while a command is in flight.
 * A periodic balance check finding another session open skips and retries later (logged).
 * Its parts: daemon/modem-wiring.ts (one modem's link -> channel -> modem -> receiver under its supervisor),
 * daemon/spool-events.ts (the spool calls that announce `sms` and `delivery` events), daemon/status-file.ts.
 * Memory (issue 13, lean targets): what a production daemon does not use is not loaded. The virtual modem and its
 * network (src/sim/) are imported only when a modem is simulated (--simulate or `simulate: true`), prom-client and
 * the metrics listener only when `metrics.listen` is set: every module loaded stays in the heap (its source text,
 * bytecode and objects) for the life of the process.
 */
import { lstat, readFile, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Dispatcher, ussdSessionsOn } from './control/dispatch.js';
import type { UssdSessions } from './control/ussd-sessions.js';
import type { EventMessage } from './control/protocol.js';
import { ControlError, ControlServer } from './control/server.js';
import type { AccessPolicy } from './control/access.js';
import { maskUrl } from './redact.js';
import { BalanceWatch, withOverrides, type BalanceResult, type BalanceUssd } from './balance/watch.js';
import { balanceSettingsFor, simulatedWebhookProblem, type Config, type ModemConfig } from './config.js';
import { Forwarder } from './forward/forwarder.js';
import { WebhookClient } from './forward/webhook.js';
import type { Logger } from './log.js';
import { ConfigError, errorMessage } from './errors.js';
import type { Modem } from './modem/modem.js';
import type { Receiver } from './receive/receiver.js';
import type { ModemSupervisor, SupervisorStatus } from './receive/supervisor.js';
import { createModemSupervisor } from './daemon/modem-wiring.js';
import { deliveryEvents, spooledEvents } from './daemon/spool-events.js';
import { StatusFile, statusFilePath, transferReportPath } from './daemon/status-file.js';
import { createNotifier } from './sd-notify.js';
import { HealthMonitor } from './health/monitor.js';
import type { Verdict } from './health/model.js';
import type { BridgeMetrics } from './metrics/registry.js';
import type { MetricsServer } from './metrics/server.js';
import type { VirtualNetwork } from './sim/operator-network.js';
import type { VirtualModem, VirtualModemOptions } from './sim/virtual-modem.js';
import { diskOps, makeDirs } from './spool/files.js';
import { checkPrivateDir } from './spool/safe-dir.js';
import { Spool, type SpoolStats } from './spool/store.js';
import type { RecentSmsList } from './metrics/recent-sms.js';
import { USER_AGENT, VERSION } from './version.js';
import type { DaemonStatus, ModemStatus, StatusSnapshot } from './status.js';
import { PinMemoryFile } from './state/pin-memory.js';

/** How long a stop waits for a status.json write in flight (StatusFile.stop()). */
const STATUS_STOP_BOUND_MS = 2_000;
/** The status snapshot is reused this long by its readers (/healthz, the page, metrics); a state change renews it. */
const SNAPSHOT_MAX_AGE_MS = 1_000;
/** How often the status page asks for its JSON. */
const PAGE_REFRESH_MS = 3_000;

export interface DaemonOptions {
  config: Config;
  logger: Logger;
  /** Run every modem on the virtual modem, whatever the config says. */
  simulate?: boolean;
  /** Options for the virtual modems created for simulated modems (demo scripts, benchmarks). */
  virtualModem?: Partial<VirtualModemOptions>;
  /** Let simulated modems post to a webhook that is not on this machine (config.simulatedWebhookProblem). */
  allowRemoteWebhook?: boolean;
}

/**
 * status.json calls the count of records written to the spool `spooled`; releases before it called it `forwarded`,
 * which is kept (the same number) for one release, for readers of the old field.
 */
function withSpooledCount(s: SupervisorStatus): ModemStatus {
  return { ...s, receiver: s.receiver && { ...s.receiver, forwarded: s.receiver.spooled } };
}

/** The simulator's classes, loaded only when a modem is simulated. */
interface SimulatorModules {
  VirtualModem: typeof VirtualModem;
  network: VirtualNetwork;
}

async function loadSimulator(): Promise<SimulatorModules> {
  const [{ VirtualModem }, { VirtualNetwork }] = await Promise.all([import('./sim/virtual-modem.js'), import('./sim/operator-network.js')]);
  return { VirtualModem, network: new VirtualNetwork() };
}

export class Daemon {
  readonly spool: Spool;
  readonly forwarder: Forwarder;
  readonly supervisors: ModemSupervisor<Modem>[] = [];
  /** Virtual modems by modem name (only for simulated modems). */
  readonly virtualModems = new Map<string, VirtualModem>();
  /** The simulator, when a modem is simulated (see the header). */
  private sim: SimulatorModules | undefined;
  /** Balance checks per modem (periodic per config, and on demand for the control plane's `balance` op). */
  balanceWatch: BalanceWatch | undefined;
  /** One USSD session per modem, by modem name: operators (control socket) and balance checks share it. */
  readonly ussdSessions = new Map<string, UssdSessions>();
  private balanceSeq = 0;
  private readonly o: DaemonOptions;
  private readonly startedAt = new Date().toISOString();
  private readonly url: string;
  private stopWatchdog: () => void = () => undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private statusFile: StatusFile | undefined;
  private writeStatus: (() => void) | undefined;
  private onSighup: (() => void) | undefined;
  private control: ControlServer | undefined;
  readonly health: HealthMonitor;
  /** The Prometheus metrics, only when `metrics.listen` is set (see the header). */
  readonly metrics: BridgeMetrics | undefined;
  private metricsServer: MetricsServer | undefined;
  private lastHealth: Verdict | undefined;
  /** The spool counts the health monitor read last (the snapshot carries the same ones it judged). */
  private lastSpoolStats: SpoolStats | undefined;
  private snap: { atMs: number; value: Promise<StatusSnapshot> } | undefined;
  /** The last SMS and their delivery, for the status page (only with the page on). */
  private recentSms: RecentSmsList | undefined;
  private readonly rejectedPins: PinMemoryFile;

  private constructor(o: DaemonOptions, spool: Spool, forwarder: Forwarder, url: string, metrics: BridgeMetrics | undefined, sim: SimulatorModules | undefined) {
    this.o = o;
    this.sim = sim;
    this.spool = spool;
    this.forwarder = forwarder;
    this.url = url;
    this.metrics = metrics;
    this.health = new HealthMonitor({
      spoolDir: o.config.spool.dir,
      fsync: o.config.spool.fsync,
      logger: o.logger.child({ stage: 'health' }),
      thresholds: { maxPendingAgeMs: o.config.health.maxPendingAgeSec * 1000 },
      // At least as often as the watchdog pings (half of WatchdogSec), at most every 30 s.
      probeIntervalMs: Math.min(30_000, Math.max(1000, Number(process.env.WATCHDOG_USEC) / 2000 || 30_000)),
      source: {
        startedAtMs: Date.parse(this.startedAt),
        modems: () => this.supervisors.map((s) => s.status()),
        forwarder: () => forwarder.stats(),
        spool: async () => (this.lastSpoolStats = await spool.stats()),
      },
    });
    this.rejectedPins = new PinMemoryFile(o.config.stateDir ?? o.config.spool.dir, o.logger.child({ stage: 'state' }));
  }

  /**
   * The virtual operators' network joining the simulated modems that have a `number` and an `operator`. Only a daemon
   * with a simulated modem has one.
   */
  get virtualNetwork(): VirtualNetwork {
    if (!this.sim) throw new Error('no simulated modem: this daemon has no virtual network');
    return this.sim.network;
  }

  static async start(o: DaemonOptions): Promise<Daemon> {
    const { config, logger } = o;
    const simulationProblem = simulatedWebhookProblem(config, o.simulate === true, o.allowRemoteWebhook === true);
    if (simulationProblem) throw new ConfigError([simulationProblem]);
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
      // Trusted directories (safe-dir.ts): the spool (checked by Spool.open), the state directory that holds the
      // spool's integrity key and the PIN memory, and the control socket's directory. Unsafe -> UnsafePathError (exit 78).
      const stateDir = config.stateDir ?? config.spool.dir;
      if (config.stateDir !== undefined) {
        await makeDirs(stateDir);
        await checkPrivateDir(stateDir, 'stateDir');
      }
      spool = await Spool.open(config.spool.dir, { logger: logger.child({ stage: 'spool' }), fsync: config.spool.fsync, keyDir: stateDir });
      try {
        await checkSocketDir(config.control.socketPath);
      } catch (err) {
        await spool.close();
        throw err;
      }
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
      // Made-up SMS are marked and never signed with the production secret (webhook.ts): records say so themselves
      // (`simulated`, whatever this config says when they are delivered); these modems' records are treated so too.
      simulatedModems: new Set(config.modems.filter((m) => o.simulate === true || m.simulate).map((m) => m.name)),
      userAgent: USER_AGENT,
    });
    const policy = {
      baseDelayMs: config.webhook.retry.baseDelayMs,
      maxDelayMs: config.webhook.retry.maxDelayMs,
      ...(config.webhook.retry.maxAgeHours === null ? {} : { maxAgeMs: config.webhook.retry.maxAgeHours * 3_600_000 }),
      probeIntervalMs: config.webhook.retry.probeIntervalMs,
    };
    // The metrics read the daemon's status; `daemonRef` is set as soon as the daemon exists (before any scrape).
    let daemonRef: Daemon | undefined;
    let metrics: BridgeMetrics | undefined;
    let metricsServerModule: typeof import('./metrics/server.js') | undefined;
    let sim: SimulatorModules | undefined;
    try {
      if (config.metrics.listen) {
        const [registry, server] = await Promise.all([import('./metrics/registry.js'), import('./metrics/server.js')]);
        metricsServerModule = server;
        metrics = new registry.BridgeMetrics({
          version: VERSION,
          modems: () => daemonRef?.status().modems ?? [],
          forwarder: () => daemonRef?.forwarder.stats() ?? { delivered: 0, retried: 0, dead: 0 },
          spool: () => spool.stats(),
          healthy: async () => (daemonRef ? (await daemonRef.snapshot()).health.healthy : false),
        });
      }
      if (o.simulate === true || config.modems.some((m) => m.simulate)) sim = await loadSimulator();
    } catch (err) {
      await spool.close();
      process.off('SIGHUP', onSighup);
      throw err;
    }
    const forwarder = new Forwarder({
      spool: deliveryEvents(spool, (e) => daemonRef?.publish(e)),
      client: metrics ? metrics.instrumentPoster(client) : client,
      policy,
      logger: logger.child({ stage: 'forward' }),
      strictOrder: config.webhook.strictOrder,
      strictOrderHoldMs: config.webhook.strictOrderHoldSec * 1000,
    });
    const daemon = new Daemon(o, spool, forwarder, url, metrics, sim);
    daemonRef = daemon;
    daemon.onSighup = onSighup;
    daemon.health.start();
    if (config.metrics.listen && metrics && metricsServerModule) {
      try {
        const page = config.metrics.page.enabled ? await daemon.statusPage() : undefined;
        daemon.metricsServer = await metricsServerModule.startMetricsServer({
          listen: config.metrics.listen,
          registry: metrics.registry,
          health: async () => (await daemon.snapshot()).health,
          page,
          token: config.metrics.token,
          protectMetrics: config.metrics.protectMetrics,
          maxConnections: config.metrics.maxConnections,
          logger: logger.child({ stage: 'metrics' }),
        });
      } catch (err) {
        daemon.health.stop();
        await spool.close();
        process.off('SIGHUP', onSighup);
        throw err;
      }
    }
    forwarder.start();
    for (const m of config.modems) daemon.startModem(m);
    await daemon.startControl();
    daemon.startBalanceWatch();
    daemon.startStatusFile();
    daemon.schedulePrune();
    const stats = await spool.stats();
    logger.info({ webhook: maskUrl(url), spool: config.spool.dir, modems: config.modems.map((m) => m.name), pending: stats.pending, dead: stats.dead }, `pulsa-bridge ${VERSION} started`);
    notifier.ready(`forwarding to ${url}; ${stats.pending} pending`);
    // The ping depends on real progress: this timer firing (event loop), the spool probe, modems and forwarder moving.
    daemon.stopWatchdog = notifier.startWatchdog(() => daemon.health.liveness());
    return daemon;
  }

  private startModem(m: ModemConfig): void {
    const simulate = this.o.simulate === true || m.simulate;
    const path = simulate ? `/virtual/${m.name}` : m.port;
    if (simulate && !this.virtualModems.has(m.name)) {
      const sim = this.sim;
      if (!sim) throw new Error(`modem ${m.name} is simulated but the simulator was not loaded`); // start() loads it for every simulated modem
      // A simulated SIM with a number and an operator is a line of the virtual network (balance codes, transfers).
      const line = m.number && m.operator ? sim.network.join({ number: m.number, operator: m.operator, ...(m.virtual ?? {}) }) : undefined;
      const vm = new sim.VirtualModem({
        path,
        profile: 'simcom',
        ...this.o.virtualModem,
        ...(m.pin ? { pin: m.pin } : {}),
        ...(m.virtual && m.virtual.quirks.length > 0 ? { quirks: m.virtual.quirks } : {}),
        ...(line ? { ussdMenus: line.ussdMenus, onSmsSubmitted: line.onSmsSubmitted, identity: { ...this.o.virtualModem?.identity, ownNumber: line.ownNumber } } : {}),
      });
      line?.connect(vm);
      vm.start();
      this.virtualModems.set(m.name, vm);
    }
    const supervisor = createModemSupervisor(m, {
      spool: spooledEvents(this.spool, (e) => this.publish(e)),
      logger: this.o.logger,
      path,
      binding: simulate ? 'mock' : 'native',
      simulated: simulate,
      rejectedPins: this.rejectedPins,
      onStateChange: () => this.writeStatus?.(),
      onUrc: (urc) => this.publish({ v: 1, event: 'urc', modem: m.name, data: { name: urc.name, lines: urc.lines, data: urc.data } }),
      // The first configured modem also joins the parts left by modems no longer in config (renamed or removed).
      ...(this.o.config.modems[0]?.name === m.name ? { adoptPartsOf: (name: string) => !this.o.config.modems.some((c) => c.name === name) } : {}),
      ...(this.metrics ? { onReceiver: (r: Receiver) => this.metrics?.trackReceiver(m.name, r.stats) } : {}),
    });
    this.supervisors.push(supervisor);
    this.ussdSessions.set(m.name, ussdSessionsOn(m.name, supervisor.scheduler, this.o.logger.child({ modem: m.name, stage: 'ussd' })));
    supervisor.start();
  }

  /** The control socket (see the header). Never fails the start: a socket that cannot be opened is logged. */
  private async startControl(): Promise<void> {
    const { config, logger } = this.o;
    const path = config.control.socketPath;
    try {
      const gid = config.control.group === undefined ? undefined : await groupId(config.control.group).catch((err: unknown) => Promise.reject(new Error(`control.group: ${errorMessage(err)}`)));
      const access = await this.accessPolicy();
      const dispatcher = new Dispatcher({
        access,
        modems: config.modems.map((m, i) => {
          const s = this.supervisors[i]!;
          return { name: m.name, port: m.port, scheduler: s.scheduler, state: () => s.status().state, ussd: this.ussdSessions.get(m.name)!, receiver: () => s.currentReceiver() };
        }),
        version: VERSION,
        logger,
        status: () => this.status(),
        publish: (e) => this.publish(e),
        balance: (name, code, replies) => this.checkBalanceNow(name, code, replies),
      });
      const server = new ControlServer({ path, handler: dispatcher.handle, logger: logger.child({ stage: 'control' }), ...(gid !== undefined ? { gid } : {}) });
      await server.listen();
      this.control = server;
    } catch (err) {
      logger.error({ err, path }, `control socket ${path} not opened: ${errorMessage(err)}; the CLI's diagnostics open the port directly (and find it busy) until the next start`);
    }
  }

  /** Who may operate through the control socket: root, this uid, and control.operateGroup when it exists. */
  private async accessPolicy(): Promise<AccessPolicy> {
    const { config, logger } = this.o;
    const daemonUid = process.getuid?.() ?? -1;
    const operateGroup = String(config.control.operateGroup);
    let operateGid: number | undefined;
    try {
      operateGid = await groupId(config.control.operateGroup);
    } catch (err) {
      logger.warn({ operateGroup }, `control.operateGroup: ${errorMessage(err)}: only root and the daemon's user (uid ${daemonUid}) may operate (AT, USSD, SMS send/delete)`);
    }
    logger.info({ operateGroup, operateGid, daemonUid }, `control socket: reading for its group, operating for root, uid ${daemonUid}${operateGid === undefined ? '' : ` and group ${operateGroup} (gid ${operateGid})`}`);
    return { daemonUid, operateGid, operateGroup };
  }

  /** Sends an event to the subscribed control clients (none when the socket is not open), and to the page's list. */
  private publish(event: EventMessage): void {
    if (this.recentSms && (event.event === 'sms' || event.event === 'delivery')) {
      this.recentSms.onEvent(event);
      this.snap = undefined; // the page's next read shows it (within one refresh, not one refresh plus the reuse)
    }
    this.control?.broadcast(event);
  }

  /**
   * The status page's JSON (src/metrics/page-view.ts) from the one snapshot; serialised at most once per snapshot,
   * so many open pages cost one build per SNAPSHOT_MAX_AGE_MS. Seeds the page's SMS list with the pending records.
   */
  private async statusPage(): Promise<() => Promise<string>> {
    const { config } = this.o;
    const [{ RecentSmsList }, { buildPageView }] = await Promise.all([import('./metrics/recent-sms.js'), import('./metrics/page-view.js')]);
    const recent = new RecentSmsList(config.metrics.page.recent);
    recent.seed((await this.spool.list('pending', { limit: config.metrics.page.recent })).flatMap((r) => (r.kind === 'sms' ? [r] : [])));
    this.recentSms = recent;
    const configured = new Map(config.modems.map((m) => [m.name, { number: m.number, operator: m.operator }]));
    const reportFile = transferReportPath(config.spool.dir);
    let transfer: { mtimeMs: number; value: Record<string, unknown> | undefined } | undefined;
    const readTransfer = async () => {
      try {
        const st = await stat(reportFile);
        if (transfer?.mtimeMs !== st.mtimeMs) transfer = { mtimeMs: st.mtimeMs, value: JSON.parse(await diskOps.readText(reportFile)) as Record<string, unknown> };
      } catch (err) {
        // No test transfer yet (ENOENT), or a report being rewritten: the page shows none / the previous one.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') transfer = undefined;
        else this.o.logger.debug({ err }, `status page: ${reportFile} not read: ${errorMessage(err)}`);
      }
      return transfer?.value;
    };
    let built: { from: Promise<StatusSnapshot>; body: Promise<string> } | undefined;
    return () => {
      const from = this.snapshot();
      if (built?.from !== from) {
        const body = (async () => {
          const [snapshot, report] = await Promise.all([from, readTransfer()]);
          return JSON.stringify(
            buildPageView({
              snapshot,
              nowMs: Date.now(),
              configured,
              ussd: (name) => {
                const open = this.ussdSessions.get(name)?.current();
                return open && { owner: open.owner.label, openedAt: open.openedAt };
              },
              recent: recent.list(),
              lastSmsAt: (name) => recent.lastReceivedAt(name),
              transfer: report,
              showText: config.metrics.page.showText,
              showNumbers: config.metrics.page.showNumbers,
              refreshMs: PAGE_REFRESH_MS,
            }),
          );
        })();
        built = { from, body };
      }
      return built.body;
    };
  }

  private startBalanceWatch(): void {
    const { config, logger } = this.o;
    this.balanceWatch = new BalanceWatch({
      modems: config.modems.flatMap((m) => (m.balance ? [{ name: m.name, settings: m.balance }] : [])),
      ussdFor: (name) => this.ussdFor(name),
      busy: (name) => {
        const open = this.ussdSessions.get(name)?.current();
        return open && `a USSD session opened by ${open.owner.label} at ${open.openedAt} is open`;
      },
      logger: logger.child({ stage: 'balance' }),
      onResult: () => this.writeStatus?.(),
    });
    this.balanceWatch.start();
  }

  /**
   * A balance check now (the control socket's `balance` op): the modem's settings, or the code and replies given;
   * kept as the modem's last result. A modem without settings and without a code is a ControlError `bad_request`.
   */
  private async checkBalanceNow(name: string, code: string | undefined, replies: readonly string[] | undefined): Promise<BalanceResult> {
    const m = this.o.config.modems.find((x) => x.name === name);
    const settings = m && withOverrides(balanceSettingsFor(m), code, replies);
    if (!settings || !this.balanceWatch) {
      throw new ControlError('bad_request', `modem ${name} has no balance check`, 'pass --code (e.g. --code "*888#"), or set "operator" or a "balance" section for it in the config');
    }
    return this.balanceWatch.checkNow(name, settings);
  }

  /**
   * The USSD of a modem for one balance check: its UssdSessions under an owner of its own, so the check holds the
   * scheduler only while a command is in flight, and an operator's session and a check never interleave (`busy`).
   */
  ussdFor(name: string): BalanceUssd {
    const sessions = this.ussdSessions.get(name);
    if (!sessions) throw new Error(`no modem named ${name}`);
    const owner = { id: `balance-${++this.balanceSeq}`, label: `the daemon's balance check of ${name}` };
    return {
      ussdOpen: (code, o) => sessions.open(owner, code, o ?? {}),
      ussdReply: (text, o) => sessions.reply(owner, text, o ?? {}),
      ussdCancel: () => sessions.cancel(owner),
    };
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

  /** `status.json` for `pulsa-bridge status` (status-file.ts), rewritten on every modem or balance change too. */
  private startStatusFile(): void {
    const file = new StatusFile({
      file: statusFilePath(this.o.config.spool.dir),
      logger: this.o.logger,
      snapshot: () => this.snapshot(),
    });
    this.statusFile = file;
    this.writeStatus = () => {
      this.snap = undefined; // a modem's state or a balance changed: the next reader judges anew
      file.writeSoon();
    };
    file.start();
  }

  /** Where the metrics listener is bound (host:port), when configured. */
  get metricsAddress(): string | undefined {
    return this.metricsServer?.address;
  }

  /**
   * The one status snapshot (status + health verdict + the spool counts it was judged on) that status.json, /healthz,
   * the metrics' `healthy` and the status page all read: judged at most once per SNAPSHOT_MAX_AGE_MS (concurrent
   * readers share one judgement), and anew after any modem state or balance change.
   */
  snapshot(): Promise<StatusSnapshot> {
    const now = Date.now();
    if (this.snap && now - this.snap.atMs < SNAPSHOT_MAX_AGE_MS) return this.snap.value;
    const value = this.health.health().then(({ healthy, problems }) => {
      this.lastHealth = { healthy, problems };
      return { ...this.status(), health: this.lastHealth, spool: this.lastSpoolStats! };
    });
    const entry = { atMs: now, value };
    this.snap = entry;
    value.catch(() => {
      if (this.snap === entry) this.snap = undefined; // a failed judgement is not reused
    });
    return value;
  }

  status(): DaemonStatus {
    return {
      version: VERSION,
      startedAt: this.startedAt,
      webhookUrl: maskUrl(this.url), // status.json, `status` and the metrics: never the credentials or query values
      modems: this.supervisors.map((s) => {
        const status = withSpooledCount(s.status());
        const balance = this.balanceWatch?.lastResult(status.name);
        return balance ? { ...status, balance } : status;
      }),
      forwarder: this.forwarder.stats(),
      ...(this.lastHealth ? { health: this.lastHealth } : {}),
    };
  }

  /** Stop reading, finish or abandon the POSTs in flight within the grace bound, close the ports. */
  async stop(): Promise<void> {
    const { logger, config } = this.o;
    this.stopWatchdog();
    await this.control?.close().catch((err: unknown) => logger.warn({ err }, `closing the control socket failed: ${errorMessage(err)}`));
    this.control = undefined;
    this.health.stop();
    await this.metricsServer?.close();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    // No status writes from here on (a modem's last state change would ask for one); the one in flight ends below.
    const statusStopped = this.statusFile?.stop();
    await this.balanceWatch?.stop();
    await Promise.all(this.supervisors.map((s) => s.stop()));
    await this.forwarder.stop(config.shutdownGraceSec * 1000);
    await this.spool.close();
    // Bounded: a status write stuck on a spool filesystem that no longer answers must not hold the stop (systemd's
    // TimeoutStopSec would end it by SIGKILL); the file is removed below whatever that write does later.
    await Promise.race([statusStopped, new Promise<void>((r) => setTimeout(r, STATUS_STOP_BOUND_MS).unref())]);
    await rm(statusFilePath(config.spool.dir), { force: true }).catch(() => undefined); // stale status is worse than none
    if (this.onSighup) process.off('SIGHUP', this.onSighup);
    this.sim?.network.close();
    for (const vm of this.virtualModems.values()) vm.stop();
    logger.info('pulsa-bridge stopped');
  }
}

/** The control socket's directory, when it exists (else the socket's listen fails and says so), must be private. */
async function checkSocketDir(socketPath: string): Promise<void> {
  const dir = dirname(socketPath);
  try {
    await lstat(dir);
  } catch {
    return; // missing: nothing is trusted in it; the control server's listen reports the failure
  }
  await checkPrivateDir(dir, 'the control socket directory (control.socket)');
}

/** A group name or gid -> gid (from /etc/group). */
async function groupId(group: string | number): Promise<number> {
  if (typeof group === 'number') return group;
  const line = (await readFile('/etc/group', 'utf8')).split('\n').find((l) => l.split(':')[0] === group);
  const gid = line === undefined ? NaN : Number(line.split(':')[2]);
  if (!Number.isInteger(gid)) throw new Error(`no group named "${group}" in /etc/group`);
  return gid;
}
