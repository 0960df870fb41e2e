/**
 * The daemon's Prometheus metrics (prom-client), in the exporters' conventions: prefix `pulsa_bridge_`, snake case,
 * counters end in `_total`, base units (seconds, dBm, rupiah), one `_info` metric per build and per modem.
 * No polling, no timers: gauges and mirrored counters are computed at scrape time from the daemon's one status
 * snapshot. MetricFeeds takes what is fed as it happens (each receiver's counts, each webhook POST's timing, each
 * canary run's duration); it exists before the snapshot does, so the forwarder, the receivers and the canaries'
 * scheduler can be built with it. The canaries' series are in ./canary-metrics.ts.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Outcome } from '../forward/policy.js';
import type { WebhookPoster } from '../forward/webhook.js';
import type { SmsRecord } from '../spool/types.js';
import { canaryDurationHistogram, registerCanaryMetrics, type CanaryMetricsView } from './canary-metrics.js';

/** The per-modem part of the daemon's status that the metrics read (structural: no import of the daemon). */
export interface ModemMetricsView {
  name: string;
  state: string;
  reconnects: number;
  failedAttempts?: number | undefined;
  identity?:
    { manufacturer?: string | undefined; model?: string | undefined; profile?: string | undefined } | undefined;
  signal?: { dbm?: number | undefined; rssi: number; sampledAt: string } | undefined;
  registration?: { stat: number; registered: boolean; source: string; sampledAt: string } | undefined;
  /** Each SMS memory's fill as the modem last showed it (the receiver's status). */
  receiver?: { storages?: Array<{ storage: string; used: number; total: number }> | undefined } | undefined;
  /** Filled by the balance watch, when there is one. */
  balance?: { balance: number | null; activeUntil: string | null; checkedAt?: string } | undefined;
}

/** The part of the daemon's status snapshot the metrics read (structural: no import of the daemon). */
export interface MetricsSnapshot {
  modems: ModemMetricsView[];
  forwarder: { delivered: number; retried: number; dead: number };
  spool: {
    pending: number;
    oldestPendingAgeMs?: number | undefined;
    sent: number;
    dead: number;
    ignored: number;
    quarantine: number;
    parts: number;
  };
  /** The verdict /healthz answers with (`pulsa_bridge_healthy`). */
  health: { healthy: boolean };
  /** The scheduled test transfers (absent: none configured). */
  canaries?: readonly CanaryMetricsView[] | undefined;
}

export interface MetricsSource {
  version: string;
  /** The daemon's one status snapshot (the one /healthz and status.json read). */
  snapshot(): Promise<MetricsSnapshot>;
}

/** Receiver counts the metrics read (Receiver['stats'], by reference: it is updated in place). */
export interface ReceiverCounts {
  spooled: number;
  ignored: number;
  quarantined: number;
  duplicates: number;
}

const OUTCOMES = {
  spooled: 'spooled',
  ignored: 'ignored',
  quarantined: 'quarantined',
  duplicate: 'duplicates',
} as const satisfies Record<string, keyof ReceiverCounts>;
type ReceiveOutcome = keyof typeof OUTCOMES;

const SPOOL_AREAS = ['pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'] as const;

/** 'YYYY-MM-DD' (the SIM's last active day, operator time WIB) -> the end of that day, epoch seconds. */
export function activeUntilSeconds(day: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return undefined;
  const endUtc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 1) - 7 * 3_600_000; // 24:00 WIB (UTC+7)
  return Number.isFinite(endUtc) ? endUtc / 1000 : undefined;
}

function outcomeClass(o: Outcome): string {
  if (o.kind === 'http') return `${Math.floor(o.status / 100)}xx`;
  return o.kind; // 'network' | 'timeout'
}

/** What is fed to the metrics as it happens: receivers' counts, webhook POST and canary run timings (see the header). */
export class MetricFeeds {
  /** Per modem: counts of finished receivers (folded in when the next one is tracked) and the live one. */
  private readonly received = new Map<
    string,
    { base: Record<ReceiveOutcome, number>; live: ReceiverCounts | undefined }
  >();
  readonly requestDuration = new Histogram({
    name: 'pulsa_bridge_webhook_request_duration_seconds',
    help: 'Duration of one webhook POST, by outcome (2xx, 4xx, 5xx, network, timeout)',
    labelNames: ['outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [],
  });
  readonly deliveryLatency = new Histogram({
    name: 'pulsa_bridge_sms_delivery_latency_seconds',
    help: 'From the SMS being read by the bridge to the webhook answering 2xx',
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
    registers: [],
  });
  readonly canaryDuration = canaryDurationHistogram();

  /**
   * A canary run has ended: its duration, by canary and outcome. A `skipped` run (held back by the cap or a pause)
   * never ran and is not timed; its count comes from the snapshot like every other outcome's.
   */
  observeCanaryRun(canary: string, outcome: string, seconds: number): void {
    if (outcome === 'skipped' || !Number.isFinite(seconds) || seconds < 0) return;
    this.canaryDuration.observe({ canary, outcome }, seconds);
  }

  /**
   * A new receiver for `modem` (after every (re)connect): the previous one has stopped, so its counts are final and
   * are added to the modem's base; `stats` is read live from now on.
   */
  trackReceiver(modem: string, stats: ReceiverCounts): void {
    const entry = this.received.get(modem) ?? {
      base: { spooled: 0, ignored: 0, quarantined: 0, duplicate: 0 },
      live: undefined,
    };
    if (entry.live) for (const o of Object.keys(OUTCOMES) as ReceiveOutcome[]) entry.base[o] += entry.live[OUTCOMES[o]];
    entry.live = stats;
    this.received.set(modem, entry);
  }

  /** SMS of `modem` with this outcome since the start, across its receivers. */
  receivedCount(modem: string, outcome: ReceiveOutcome): number {
    const r = this.received.get(modem);
    return (r?.base[outcome] ?? 0) + (r?.live?.[OUTCOMES[outcome]] ?? 0);
  }

  /** The webhook client, timed: every POST's duration by outcome; for a 2xx, the SMS's latency since it was spooled. */
  instrumentPoster(client: WebhookPoster, now: () => number = Date.now): WebhookPoster {
    return {
      post: async (rec: SmsRecord) => {
        const started = now();
        const outcome = await client.post(rec);
        const end = now();
        this.requestDuration.observe({ outcome: outcomeClass(outcome) }, (end - started) / 1000);
        if (outcome.kind === 'http' && outcome.status >= 200 && outcome.status < 300) {
          const since = Date.parse(rec.receivedAt);
          if (Number.isFinite(since)) this.deliveryLatency.observe(Math.max(0, (end - since) / 1000));
        }
        return outcome;
      },
    };
  }
}

export class BridgeMetrics {
  readonly registry = new Registry();
  readonly feeds: MetricFeeds;

  constructor(src: MetricsSource, opts: { defaultMetrics?: boolean; feeds?: MetricFeeds } = {}) {
    const feeds = (this.feeds = opts.feeds ?? new MetricFeeds());
    const registers = [this.registry];
    const modems = async () => (await src.snapshot()).modems;
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });

    new Gauge({
      name: 'pulsa_bridge_build_info',
      help: 'pulsa-bridge version and Node.js runtime (value is always 1)',
      labelNames: ['version', 'nodejs_version'],
      registers,
      collect() {
        this.set({ version: src.version, nodejs_version: process.version }, 1);
      },
    });
    new Gauge({
      name: 'pulsa_bridge_healthy',
      help: '1 when /healthz answers 200, 0 when it answers 503',
      registers,
      async collect() {
        this.set((await src.snapshot()).health.healthy ? 1 : 0);
      },
    });

    // ---- receive
    new Counter({
      name: 'pulsa_bridge_sms_received_total',
      help: 'SMS received, by modem and outcome (spooled for delivery, ignored by the sender filter or not for a person by its TP-PID or DCS, quarantined as undecodable, duplicate of a record already spooled)',
      labelNames: ['modem', 'outcome'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list)
          for (const outcome of Object.keys(OUTCOMES) as ReceiveOutcome[])
            this.inc({ modem: m.name, outcome }, feeds.receivedCount(m.name, outcome));
      },
    });

    new Gauge({
      name: 'pulsa_bridge_sms_storage_used',
      help: 'SMS held in each modem memory (SM the SIM, ME the modem) as the modem last reported it',
      labelNames: ['modem', 'storage'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list)
          for (const s of m.receiver?.storages ?? []) this.set({ modem: m.name, storage: s.storage }, s.used);
      },
    });
    new Gauge({
      name: 'pulsa_bridge_sms_storage_capacity',
      help: 'Slots of each modem memory (SM, ME) as the modem last reported them',
      labelNames: ['modem', 'storage'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list)
          for (const s of m.receiver?.storages ?? []) this.set({ modem: m.name, storage: s.storage }, s.total);
      },
    });

    // ---- forward
    new Counter({
      name: 'pulsa_bridge_webhook_deliveries_total',
      help: 'Webhook delivery results: delivered (2xx), retried (retryable failure), dead (given up)',
      labelNames: ['result'],
      registers,
      async collect() {
        const f = (await src.snapshot()).forwarder;
        this.reset();
        this.inc({ result: 'delivered' }, f.delivered);
        this.inc({ result: 'retried' }, f.retried);
        this.inc({ result: 'dead' }, f.dead);
      },
    });
    this.registry.registerMetric(feeds.requestDuration);
    this.registry.registerMetric(feeds.deliveryLatency);

    // ---- canaries (scheduled test transfers)
    registerCanaryMetrics(this.registry, async () => (await src.snapshot()).canaries);
    this.registry.registerMetric(feeds.canaryDuration);

    // ---- spool
    new Gauge({
      name: 'pulsa_bridge_spool_records',
      help: 'Records in the spool, by area',
      labelNames: ['area'],
      registers,
      async collect() {
        const s = (await src.snapshot()).spool;
        for (const area of SPOOL_AREAS) this.set({ area }, s[area]);
      },
    });
    new Gauge({
      name: 'pulsa_bridge_spool_oldest_pending_age_seconds',
      help: 'Age of the oldest pending record (0 when none is pending)',
      registers,
      async collect() {
        const s = (await src.snapshot()).spool;
        this.set(s.pending > 0 ? (s.oldestPendingAgeMs ?? 0) / 1000 : 0);
      },
    });

    // ---- modems
    const perModem = (
      name: string,
      help: string,
      value: (m: ModemMetricsView) => number | undefined,
      labelNames: string[] = ['modem'],
    ) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          const list = await modems();
          this.reset();
          for (const m of list) {
            const v = value(m);
            if (v !== undefined) this.set({ modem: m.name }, v);
          }
        },
      });
    perModem('pulsa_bridge_modem_up', '1 when the modem is running (connected, initialised, receiving)', (m) =>
      m.state === 'running' ? 1 : 0,
    );
    perModem(
      'pulsa_bridge_modem_signal_dbm',
      'Received signal strength (AT+CSQ), dBm; absent while unknown',
      (m) => m.signal?.dbm,
    );
    perModem('pulsa_bridge_modem_registered', '1 when registered on the network (home or roaming)', (m) =>
      m.registration ? (m.registration.registered ? 1 : 0) : undefined,
    );
    perModem(
      'pulsa_bridge_modem_registration_status',
      'Network registration status code (3GPP TS 27.007 +CREG/+CEREG <stat>: 1 home, 5 roaming, 2 searching, 3 denied, 0 not searching)',
      (m) => m.registration?.stat,
    );
    perModem(
      'pulsa_bridge_modem_signal_sampled_timestamp_seconds',
      'When signal and registration were last sampled',
      (m) => {
        const at = m.signal?.sampledAt ?? m.registration?.sampledAt;
        return at ? Date.parse(at) / 1000 : undefined;
      },
    );
    perModem(
      'pulsa_bridge_balance_rupiah',
      'SIM credit balance from the balance watch, rupiah',
      (m) => m.balance?.balance ?? undefined,
    );
    perModem(
      'pulsa_bridge_sim_active_until_timestamp_seconds',
      "End of the SIM's active period from the balance watch (epoch seconds)",
      (m) => (m.balance?.activeUntil ? activeUntilSeconds(m.balance.activeUntil) : undefined),
    );
    new Gauge({
      name: 'pulsa_bridge_modem_info',
      help: 'Modem identity (value is always 1)',
      labelNames: ['modem', 'manufacturer', 'model', 'profile'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list) {
          const id = m.identity;
          this.set(
            { modem: m.name, manufacturer: id?.manufacturer ?? '', model: id?.model ?? '', profile: id?.profile ?? '' },
            1,
          );
        }
      },
    });
    new Counter({
      name: 'pulsa_bridge_modem_reconnects_total',
      help: 'Connections re-established after one that ran (after an unplug, a reset or a hang); failed attempts are counted apart',
      labelNames: ['modem'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list) this.inc({ modem: m.name }, m.reconnects);
      },
    });
    new Counter({
      name: 'pulsa_bridge_modem_connect_failures_total',
      help: 'Attempts to connect to or initialise the modem that failed (a missing port retried counts each try)',
      labelNames: ['modem'],
      registers,
      async collect() {
        const list = await modems();
        this.reset();
        for (const m of list) this.inc({ modem: m.name }, m.failedAttempts ?? 0);
      },
    });
  }
}
