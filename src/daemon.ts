/**
 * Composition root: the only place that creates I/O objects and wires the stages
 *   serial link -> AT channel -> modem -> receiver -> spool -> forwarder -> webhook,
 * plus the control socket, the balance checks, the health monitor, the metrics and status.json.
 * start() is one straight sequence; each step that acquires something pushes its release on one cleanup stack, so a
 * failure at any step releases exactly what was acquired, in reverse, and stop() unwinds the same stack. Nothing in
 * the spool is lost by any stop: a POST abandoned at the grace bound leaves its record pending, SMS not yet spooled
 * stay on the SIM. What is loaded only when used: prom-client and the listener (`metrics.listen`), the status page
 * (`metrics.page`); a virtual modem's port loads the simulator (the link factory).
 */
import { rm } from 'node:fs/promises';
import {
  BalanceWatch,
  SHARED_CHECK_MIN_INTERVAL_MS,
  withOverrides,
  type BalanceResult,
  type BalanceUssd,
} from './balance/watch.js';
import { balanceSettingsFor, isLoopbackUrl, type Config } from './config.js';
import { madeUpSmsProblem } from './serial/port-kind.js';
import { ControlError, type EventMessage } from './control/protocol.js';
import { ussdBrokerOn, type UssdBroker } from './ops/ussd-broker.js';
import { Canaries, CanaryRefusal } from './canary/scheduler.js';
import type { CanaryControl } from './control/server/dispatch.js';
import { CleanupStack } from './daemon/cleanup.js';
import { localTransferOps } from './daemon/local-ops.js';
import { checkSocketDir, openControlSocket } from './daemon/control-socket.js';
import { Fanout } from './daemon/fanout.js';
import { createModemSupervisor } from './daemon/modem-wiring.js';
import { SpoolRescanOnSighup } from './daemon/sighup.js';
import { deliveryEvents, spooledEvents } from './daemon/spool-events.js';
import { StatusBoard } from './daemon/status-board.js';
import { StatusFile, statusFilePath } from './daemon/status-file.js';
import { ConfigError, errorMessage } from './errors.js';
import { Forwarder } from './forward/forwarder.js';
import { WebhookClient } from './forward/webhook.js';
import { HealthMonitor } from './health/monitor.js';
import type { Logger } from './log.js';
import type { BridgeMetrics, MetricFeeds } from './metrics/registry.js';
import type { Modem } from './modem/modem.js';
import type { Receiver } from './receive/receiver.js';
import type { ModemSupervisor } from './modem/supervisor.js';
import { maskUrl } from './redact.js';
import { orderPaths, ResellerClient } from './reseller/client.js';
import { createNotifier } from './sd-notify.js';
import { makeDirs } from './spool/files.js';
import { checkPrivateDir } from './spool/safe-dir.js';
import { Spool } from './spool/store.js';
import { PinMemoryFile } from './state/pin-memory.js';
import type { DaemonStatus, StatusSnapshot } from './status.js';
import { USER_AGENT, VERSION } from './version.js';

/** How long a stop waits for a status.json write in flight (StatusFile.stop()). */
const STATUS_STOP_BOUND_MS = 2_000;
/** The status snapshot is reused this long by its readers (/healthz, the page, metrics); a change renews it. */
const SNAPSHOT_MAX_AGE_MS = 1_000;
const PRUNE_INTERVAL_MS = 3_600_000;

export interface DaemonOptions {
  config: Config;
  logger: Logger;
}

/** What a started daemon is made of (built by start(), in its order). */
interface DaemonParts {
  spool: Spool;
  forwarder: Forwarder;
  supervisors: ModemSupervisor<Modem, Receiver>[];
  ussd: Map<string, UssdBroker>;
  balanceWatch: BalanceWatch;
  health: HealthMonitor<Awaited<ReturnType<Spool['stats']>>>;
  board: StatusBoard;
  metrics: BridgeMetrics | undefined;
  metricsAddress: string | undefined;
  cleanup: CleanupStack;
}

export class Daemon {
  readonly spool: Spool;
  readonly forwarder: Forwarder;
  readonly supervisors: readonly ModemSupervisor<Modem, Receiver>[];
  /** One USSD session per modem, by modem name: operators (control socket) and balance checks share it. */
  readonly ussdBrokers: ReadonlyMap<string, UssdBroker>;
  /** Balance checks per modem (periodic per config, and on demand for the control socket's `balance` op). */
  readonly balanceWatch: BalanceWatch;
  readonly health: HealthMonitor<Awaited<ReturnType<Spool['stats']>>>;
  /** The Prometheus metrics, only when `metrics.listen` is set. */
  readonly metrics: BridgeMetrics | undefined;
  /** Where the metrics listener is bound (host:port), when configured. */
  readonly metricsAddress: string | undefined;
  private readonly board: StatusBoard;
  private readonly cleanup: CleanupStack;
  private readonly logger: Logger;

  private constructor(p: DaemonParts, logger: Logger) {
    this.spool = p.spool;
    this.forwarder = p.forwarder;
    this.supervisors = p.supervisors;
    this.ussdBrokers = p.ussd;
    this.balanceWatch = p.balanceWatch;
    this.health = p.health;
    this.board = p.board;
    this.metrics = p.metrics;
    this.metricsAddress = p.metricsAddress;
    this.cleanup = p.cleanup;
    this.logger = logger;
  }

  static async start(o: DaemonOptions): Promise<Daemon> {
    const { config, logger } = o;
    const madeUp = madeUpSmsProblem(
      config.modems.map((m) => m.port),
      isLoopbackUrl(config.webhook.endpoint),
      maskUrl(config.webhook.endpoint),
    );
    if (madeUp) throw new ConfigError([madeUp]);
    const cleanup = new CleanupStack();
    try {
      return await Daemon.startSteps(o, cleanup);
    } catch (err) {
      await cleanup.unwind(logger);
      throw err;
    }
  }

  /** The start sequence (see the header). Every release goes on `cleanup` right after its acquisition. */
  private static async startSteps(o: DaemonOptions, cleanup: CleanupStack): Promise<Daemon> {
    const { config, logger } = o;
    const startedAt = new Date().toISOString();

    // 1. SIGHUP re-reads the spool; the handler is in before the lock is taken (its default would end the process).
    const sighup = new SpoolRescanOnSighup(logger);
    cleanup.push('the SIGHUP handler', sighup.listen());

    // 2. Trusted directories (safe-dir.ts) and the spool (recovery). Unsafe -> UnsafePathError (exit 78).
    const stateDir = config.stateDir ?? config.spool.dir;
    if (config.stateDir !== undefined) {
      await makeDirs(stateDir);
      await checkPrivateDir(stateDir, 'stateDir');
    }
    const spool = await Spool.open(config.spool.dir, {
      logger: logger.child({ stage: 'spool' }),
      fsync: config.spool.fsync,
      keyDir: stateDir,
    });
    cleanup.push('the spool', async () => {
      await spool.close();
      // status.json is the lock holder's: removed once the lock is gone, whatever a late write of it did.
      await rm(statusFilePath(config.spool.dir), { force: true }).catch(() => undefined);
    });
    sighup.attach(spool);
    await checkSocketDir(config.control.socketPath);
    for (const warning of config.warnings) logger.warn(warning);

    // 3. What is loaded only when used: the metrics.
    const metricsModules = config.metrics.listen
      ? await Promise.all([import('./metrics/registry.js'), import('./metrics/server.js')])
      : undefined;
    const feeds: MetricFeeds | undefined = metricsModules && new metricsModules[0].MetricFeeds();

    // 4. Where events go: producers (spool writes, deliveries, modems) publish; listeners subscribe as they come.
    const events = new Fanout<EventMessage>('the daemon events', logger);
    const statusChanged = new Fanout<void>('status changes', logger);

    // 5. The forwarder (built, not started).
    const url = config.webhook.endpoint;
    const client = new WebhookClient({
      url,
      timeoutMs: config.webhook.timeoutMs,
      connectTimeoutMs: config.webhook.connectTimeoutMs,
      headers: { ...config.webhook.headers },
      ...(config.webhook.hmacSecret ? { hmacSecret: config.webhook.hmacSecret } : {}),
      userAgent: USER_AGENT,
    });
    const forwarder = new Forwarder({
      spool: deliveryEvents(spool, events.publish),
      client: feeds ? feeds.instrumentPoster(client) : client,
      policy: {
        baseDelayMs: config.webhook.retry.baseDelayMs,
        maxDelayMs: config.webhook.retry.maxDelayMs,
        ...(config.webhook.retry.maxAgeHours === null
          ? {}
          : { maxAgeMs: config.webhook.retry.maxAgeHours * 3_600_000 }),
        probeIntervalMs: config.webhook.retry.probeIntervalMs,
      },
      logger: logger.child({ stage: 'forward' }),
      strictOrder: config.webhook.strictOrder,
      strictOrderHoldMs: config.webhook.strictOrderHoldSec * 1000,
    });

    // 6. The modems (built, not started): a supervisor and a USSD broker each.
    const rejectedPins = new PinMemoryFile(stateDir, logger.child({ stage: 'state' }));
    const supervisors: ModemSupervisor<Modem, Receiver>[] = [];
    const ussd = new Map<string, UssdBroker>();
    for (const m of config.modems) {
      const supervisor = createModemSupervisor(m, {
        spool: spooledEvents(spool, events.publish),
        logger,
        path: m.port,
        rejectedPins,
        onStateChange: statusChanged.publish,
        onUrc: (urc) =>
          events.publish({
            v: 1,
            event: 'urc',
            modem: m.name,
            data: { name: urc.name, lines: urc.lines, data: urc.data },
          }),
        // The first configured modem also joins the parts left by modems no longer in config (renamed or removed).
        ...(config.modems[0]?.name === m.name
          ? { adoptPartsOf: (name: string) => !config.modems.some((c) => c.name === name) }
          : {}),
        ...(feeds ? { onReceiver: (r: Receiver) => feeds.trackReceiver(m.name, r.stats) } : {}),
      });
      supervisors.push(supervisor);
      ussd.set(m.name, ussdBrokerOn(m.name, supervisor.scheduler, logger.child({ modem: m.name, stage: 'ussd' })));
    }
    const ussdOpen = (name: string) => {
      const open = ussd.get(name)?.current();
      return open && { owner: open.owner.label, openedAt: open.openedAt };
    };

    // 7. Balance checks (built, not started): each under an owner of its own on the modem's USSD broker.
    let balanceSeq = 0;
    const balanceWatch = new BalanceWatch({
      modems: config.modems.flatMap((m) => (m.balance ? [{ name: m.name, settings: m.balance }] : [])),
      ussdFor: (name) => ussdForBalance(ussd, name, ++balanceSeq),
      busy: (name) => {
        const open = ussdOpen(name);
        return open && `a USSD session opened by ${open.owner} at ${open.openedAt} is open`;
      },
      logger: logger.child({ stage: 'balance' }),
      onResult: () => statusChanged.publish(),
    });

    // 7b. The canaries (built, not started): scheduled test transfers with their money ledger beside the spool.
    const canaries = await Canaries.open({
      canaries: config.canaries,
      plan: config,
      ledgerDir: stateDir,
      open: (name, owner) => {
        const i = config.modems.findIndex((m) => m.name === name);
        if (i < 0) throw new Error(`no modem named ${name}`);
        return Promise.resolve(
          localTransferOps(
            { name, scheduler: supervisors[i]!.scheduler, ussd: ussd.get(name)! },
            events.subscribe,
            owner,
          ),
        );
      },
      busy: (name) => ussdOpen(name)?.owner,
      notReady: (name) => {
        const state = supervisors[config.modems.findIndex((m) => m.name === name)]?.status().state;
        return state === 'running' ? undefined : `modem ${name} is ${state ?? 'not configured'}`;
      },
      ...(config.canaries.some((c) => c.order) ? { reseller: resellerApi(config) } : {}),
      logger: logger.child({ stage: 'canary' }),
      onChange: statusChanged.publish,
      ...(feeds
        ? { onRunEnd: (name: string, outcome: string, sec: number) => feeds.observeCanaryRun(name, outcome, sec) }
        : {}),
    });

    // 8. Health and the one status snapshot everything reads.
    const health = new HealthMonitor({
      spoolDir: config.spool.dir,
      fsync: config.spool.fsync,
      logger: logger.child({ stage: 'health' }),
      thresholds: { maxPendingAgeMs: config.health.maxPendingAgeSec * 1000 },
      // At least as often as the watchdog pings (half of WatchdogSec), at most every 30 s.
      probeIntervalMs: Math.min(30_000, Math.max(1000, Number(process.env.WATCHDOG_USEC) / 2000 || 30_000)),
      source: {
        startedAtMs: Date.parse(startedAt),
        modems: () => supervisors.map((s) => s.status()),
        forwarder: () => forwarder.stats(),
        spool: () => spool.stats(),
        canaries: () => canaries.status(),
        sims: () =>
          config.modems.flatMap((m) => {
            const r = balanceWatch.lastResult(m.name);
            return r ? [{ modem: m.name, activeUntil: r.activeUntil, state: r.state, reasons: r.reasons }] : [];
          }),
      },
    });
    const board = new StatusBoard({
      version: VERSION,
      startedAt,
      webhookUrl: maskUrl(url), // status.json, `status` and the metrics: never the credentials or query values
      modems: () => supervisors.map((s) => s.status()),
      balance: (name) => balanceWatch.lastResult(name),
      forwarder: () => forwarder.stats(),
      canaries: () => canaries.status(),
      judge: async () => {
        const { snapshot, ...verdict } = await health.health();
        return { ...verdict, spool: snapshot.spool };
      },
      maxAgeMs: SNAPSHOT_MAX_AGE_MS,
    });
    statusChanged.subscribe(board.changed);
    events.subscribe((e) => {
      if (e.event === 'sms' || e.event === 'delivery') board.changed();
    });
    health.start();
    cleanup.push('the health monitor', () => health.stop());

    // 9. The metrics listener and the status page, when configured.
    let metrics: BridgeMetrics | undefined;
    let metricsAddress: string | undefined;
    if (metricsModules && config.metrics.listen) {
      const [registry, server] = metricsModules;
      metrics = new registry.BridgeMetrics(
        { version: VERSION, snapshot: () => board.snapshot() },
        { ...(feeds ? { feeds } : {}) },
      );
      let page: (() => Promise<string>) | undefined;
      if (config.metrics.page.enabled) {
        const statusPage = await (
          await import('./daemon/status-page.js')
        ).createStatusPage({ config, spool, snapshot: () => board.snapshot(), ussdOpen, logger });
        cleanup.push('the status page list', events.subscribe(statusPage.onEvent));
        page = () => statusPage.body();
      }
      const listener = await server.startMetricsServer({
        listen: config.metrics.listen,
        registry: metrics.registry,
        health: async () => (await board.snapshot()).health,
        page,
        token: config.metrics.token,
        protectMetrics: config.metrics.protectMetrics,
        maxConnections: config.metrics.maxConnections,
        hosts: config.metrics.hosts,
        logger: logger.child({ stage: 'metrics' }),
      });
      cleanup.push('the metrics listener', () => listener.close());
      metricsAddress = listener.address;
    }

    // 10. Delivery, then reception: messages already spooled go out while the modems connect.
    forwarder.start();
    cleanup.push('the forwarder', () => forwarder.stop(config.shutdownGraceSec * 1000));
    for (const s of supervisors) s.start();
    cleanup.push('the modems', () => Promise.all(supervisors.map((s) => s.stop())));

    // 11. The control socket (never fails the start: a socket that cannot be opened is logged).
    const control = await openControlSocket(config, logger, {
      modems: config.modems.map((m, i) => {
        const s = supervisors[i]!;
        return {
          name: m.name,
          port: m.port,
          balanceCheck: balanceSettingsFor(m) !== undefined,
          scheduler: s.scheduler,
          state: () => s.status().state,
          ussd: ussd.get(m.name)!,
          receiver: () => s.currentReceiver(),
        };
      }),
      version: VERSION,
      status: () => board.snapshot(),
      publish: events.publish,
      balance: (name, code, replies, shared) => checkBalanceNow(config, balanceWatch, name, code, replies, shared),
      canaries: canaryControl(canaries),
    });
    if (control) {
      const unsubscribe = events.subscribe((e) => control.broadcast(e));
      cleanup.push('the control socket', async () => {
        unsubscribe();
        await control
          .close()
          .catch((err: unknown) => logger.warn({ err }, `closing the control socket failed: ${errorMessage(err)}`));
      });
    }

    // 12. Periodic work: balance checks, canaries, status.json, pruning of old audit records.
    balanceWatch.start();
    cleanup.push('the balance checks', () => balanceWatch.stop());
    canaries.start();
    cleanup.push('the canaries', () => canaries.stop());
    const statusFile = new StatusFile({
      file: statusFilePath(config.spool.dir),
      logger,
      snapshot: () => board.snapshot(),
    });
    statusChanged.subscribe(() => statusFile.writeSoon());
    statusFile.start();
    // Bounded: a status write stuck on a spool filesystem that no longer answers must not hold the stop (systemd's
    // TimeoutStopSec would end it by SIGKILL); the spool's release removes the file whatever that write does later.
    cleanup.push('status.json', () =>
      Promise.race([statusFile.stop(), new Promise<void>((r) => setTimeout(r, STATUS_STOP_BOUND_MS).unref())]),
    );
    cleanup.push('the pruning timer', schedulePrune(spool, config, logger));

    // 13. Ready; the watchdog pings only while the daemon makes progress (event loop, spool probe, modems, forwarder).
    const stats = await spool.stats();
    logger.info(
      {
        webhook: maskUrl(url),
        spool: config.spool.dir,
        modems: config.modems.map((m) => m.name),
        pending: stats.pending,
        dead: stats.dead,
      },
      `pulsa-bridge ${VERSION} started`,
    );
    const notifier = createNotifier(logger);
    notifier.ready(`forwarding to ${url}; ${stats.pending} pending`);
    cleanup.push(
      'the watchdog',
      notifier.startWatchdog(() => health.liveness()),
    );

    return new Daemon(
      { spool, forwarder, supervisors, ussd, balanceWatch, health, board, metrics, metricsAddress, cleanup },
      logger,
    );
  }

  /**
   * The one status snapshot (status + health verdict + the spool counts it was judged on) that status.json, /healthz,
   * the metrics and the status page all read (daemon/status-board.ts).
   */
  snapshot(): Promise<StatusSnapshot> {
    return this.board.snapshot();
  }

  status(): DaemonStatus {
    return this.board.status();
  }

  /** Stop reading, finish or abandon the POSTs in flight within the grace bound, close the ports: the start, unwound. */
  async stop(): Promise<void> {
    await this.cleanup.unwind(this.logger);
    this.logger.info('pulsa-bridge stopped');
  }
}

/** The canaries as the control socket offers them: their refusals as the wire's errors. */
function canaryControl(canaries: Canaries): CanaryControl {
  const wire = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof CanaryRefusal) throw new ControlError(err.kind, err.message, err.hint);
      throw err;
    }
  };
  return {
    list: () => canaries.status(),
    run: (name, who) => wire(() => canaries.runNow(name, who)),
    pause: (name, who) => wire(() => canaries.pause(name, who)),
    resume: (name, who) => wire(() => canaries.resume(name, who)),
  };
}

/** The reseller API the order canaries use (the config check made sure it has an address and a key). */
function resellerApi(config: Config): { client: ResellerClient; paths: ReturnType<typeof orderPaths> } {
  const { baseUrl, apiKey, timeoutMs, orderPaths: configured } = config.reseller;
  if (!baseUrl || !apiKey) throw new ConfigError(['an order canary needs reseller.baseUrl and reseller.apiKey']);
  return {
    client: new ResellerClient({ baseUrl, apiKey, timeoutMs, userAgent: USER_AGENT }),
    paths: orderPaths(configured),
  };
}

/**
 * The USSD of a modem for one balance check: its broker under an owner of its own, so the check holds the scheduler
 * only while a command is in flight, and an operator's session and a check never interleave (`busy`).
 */
function ussdForBalance(ussd: ReadonlyMap<string, UssdBroker>, name: string, seq: number): BalanceUssd {
  const sessions = ussd.get(name);
  if (!sessions) throw new Error(`no modem named ${name}`);
  const owner = { id: `balance-${seq}`, label: `the daemon's balance check of ${name}` };
  return {
    ussdOpen: (code, o) => sessions.open(owner, code, o ?? {}),
    ussdReply: (text, o) => sessions.reply(owner, text, o ?? {}),
    ussdCancel: () => sessions.cancel(owner),
  };
}

/**
 * A balance check now (the control socket's `balance` op): the modem's settings, or the code and replies given;
 * kept as the modem's last result. A modem without settings and without a code is a ControlError `bad_request`.
 */
/** `shared`: the reading level's balance (the last or the one shared check, BalanceWatch.shared). */
async function checkBalanceNow(
  config: Config,
  watch: BalanceWatch,
  name: string,
  code: string | undefined,
  replies: readonly string[] | undefined,
  shared: boolean,
): Promise<BalanceResult> {
  const m = config.modems.find((x) => x.name === name);
  const settings = m && withOverrides(balanceSettingsFor(m), code, replies);
  if (!settings) {
    throw new ControlError(
      'bad_request',
      `modem ${name} has no balance check`,
      'pass --code (e.g. --code "*888#"), or set "operator" or a "balance" section for it in the config',
    );
  }
  if (!shared) return watch.checkNow(name, settings);
  try {
    return (await watch.shared(name, settings, SHARED_CHECK_MIN_INTERVAL_MS)).result;
  } catch (err) {
    const hint = 'the reading level gets the last balance check or a shared one; try again later, or ask an operator';
    throw new ControlError('busy', `busy: ${errorMessage(err)}`, hint);
  }
}

/** Prunes old sent and ignored records now and every hour; returns the timer's removal. */
function schedulePrune(spool: Spool, config: Config, logger: Logger): () => void {
  const prune = async () => {
    try {
      const sent = await spool.prune('sent', config.spool.sentRetentionDays);
      const ignored = await spool.prune('ignored', config.spool.ignoredRetentionDays);
      if (sent + ignored > 0) logger.info({ sent, ignored }, 'pruned old audit records');
    } catch (err) {
      logger.error({ err }, 'pruning the spool failed (will try again in an hour)');
    }
  };
  void prune();
  const timer = setInterval(() => void prune(), PRUNE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
