/**
 * The status page's JSON, PURE: the daemon's one status snapshot (the one /healthz, status.json and `pulsa-bridge
 * status` read) plus what only the page shows (the last SMS, USSD sessions open, the last test transfer), shaped for
 * web/status-page/page.js and masked here, on the server: message text and phone numbers leave the daemon only when
 * the config allows it (metrics.page.showText / showNumbers); a canary's `to` that is a number is masked like a
 * sender. Strings are passed as data; the page sets them with textContent, never as markup.
 */
import type { StatusSnapshot } from '../status.js';

type CanaryStatus = NonNullable<StatusSnapshot['canaries']>[number];
import type { RecentSms } from './recent-sms.js';

/** The daemon's snapshot as the page reads it. */
export type PageSnapshot = StatusSnapshot;

export interface PageInput {
  snapshot: PageSnapshot;
  nowMs: number;
  /** Per modem name, from the config. */
  configured: ReadonlyMap<string, { number?: string | undefined; operator?: string | undefined }>;
  /** USSD session open per modem name. */
  ussd: (modem: string) => { owner: string; openedAt: string } | undefined;
  recent: RecentSms[];
  lastSmsAt: (modem: string) => string | undefined;
  /** The last test transfer's report (the CLI writes it to the spool directory), parsed; undefined when none. */
  transfer: Record<string, unknown> | undefined;
  showText: boolean;
  showNumbers: boolean;
  refreshMs: number;
}

const MASK = '•';

/** "+6281234567890" -> "+628•••••••890": the first four and last three characters kept. */
export function maskNumber(n: string): string {
  if (n.length <= 7) return MASK.repeat(n.length);
  return n.slice(0, 4) + MASK.repeat(n.length - 7) + n.slice(-3);
}

const NUMBER_IN_TEXT = /\+?\d{8,}/g;

/** Every run of 8 or more digits (a phone number, an IMSI; never a date or an amount) in a text masked. */
export function maskNumbersIn(text: string): string {
  return text.replace(NUMBER_IN_TEXT, (m) => maskNumber(m));
}

/**
 * maskNumbersIn, except for the `keep` strings (reseller order ids, whose date part is 8 digits), which stay whole
 * wherever they appear; the text around them is masked.
 */
export function maskNumbersKeeping(text: string, keep: readonly string[]): string {
  const ids = keep.filter((k) => k !== '');
  if (ids.length === 0) return maskNumbersIn(text);
  const re = new RegExp(ids.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  let out = '';
  let from = 0;
  for (const m of text.matchAll(re)) {
    out += maskNumbersIn(text.slice(from, m.index)) + m[0];
    from = m.index + m[0].length;
  }
  return out + maskNumbersIn(text.slice(from));
}

/** A sender that is a phone number is masked; an operator's short code or name (858, TELKOMSEL) is shown. */
function sender(s: string, showNumbers: boolean): string {
  return showNumbers || !/^\+?\d{6,}$/.test(s) ? s : maskNumber(s);
}

function origin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(invalid URL)';
  }
}

export interface PageError {
  at?: string | undefined;
  source: string;
  message: string;
  hint?: string | undefined;
}

export function buildPageView(i: PageInput): unknown {
  const s = i.snapshot;
  // The canaries' order ids stay whole wherever they appear: ids, not a person's number.
  const orderIds = (s.canaries ?? []).flatMap((c) => (c.lastRun?.orderId ? [c.lastRun.orderId] : []));
  const nums = (t: string) => (i.showNumbers ? t : maskNumbersKeeping(t, orderIds));
  const optNums = (t: string | undefined) => (t === undefined ? undefined : nums(t));
  const errors: PageError[] = [];
  const modems = s.modems.map((m) => {
    const cfg = i.configured.get(m.name) ?? {};
    const identity = (m.identity ?? {}) as {
      manufacturer?: string;
      model?: string;
      operator?: string;
      ownNumber?: string;
    };
    const number = cfg.number ?? identity.ownNumber;
    if (m.lastError)
      errors.push({ at: m.since, source: `modem ${m.name}`, message: nums(m.lastError), hint: optNums(m.hint) });
    if (m.receiver?.lastError)
      errors.push({ source: `modem ${m.name} (receive)`, message: nums(m.receiver.lastError) });
    const b = m.balance;
    if (b && (b.state === 'error' || b.state === 'warning'))
      errors.push({
        at: b.checkedAt,
        source: `balance ${m.name}`,
        message: nums(b.error ?? b.reasons.join('; ')),
        hint: optNums(b.hint),
      });
    const ussd = i.ussd(m.name);
    return {
      name: m.name,
      state: m.state,
      since: m.since,
      downSince: m.state === 'running' ? null : (m.downSince ?? m.since),
      failedAttempts: m.failedAttempts ?? 0,
      hint: optNums(m.hint) ?? null,
      lastError: m.lastError ? nums(m.lastError) : null,
      device: [identity.manufacturer, identity.model].filter(Boolean).join(' ') || null,
      // The network and the signal only while the modem is there: a sample from before it went away is not its state.
      signal: m.signal && m.state === 'running' ? { dbm: m.signal.dbm ?? null, bars: m.signal.bars } : null,
      registration:
        m.registration && m.state === 'running'
          ? { text: m.registration.text, registered: m.registration.registered }
          : null,
      operator: identity.operator ?? cfg.operator ?? null,
      number: number === undefined ? null : i.showNumbers ? number : maskNumber(number),
      lastSmsAt: i.lastSmsAt(m.name) ?? null,
      received: m.receiver?.received ?? 0,
      spooled: m.receiver?.spooled ?? 0,
      reconnects: m.reconnects,
      task: m.scheduler.running === undefined ? null : nums(m.scheduler.running),
      balance: b
        ? {
            state: b.state,
            rupiah: b.balance,
            activeUntil: b.activeUntil,
            reasons: b.reasons.map(nums),
            hint: optNums(b.hint) ?? null,
            error: b.error ? nums(b.error) : null,
            checkedAt: b.checkedAt,
          }
        : null,
      ussd: ussd ? { owner: nums(ussd.owner), openedAt: ussd.openedAt } : null,
    };
  });
  const f = s.forwarder;
  if (f.endpointDown)
    errors.push({
      at: f.endpointDown.since,
      source: 'webhook',
      message: nums(f.endpointDown.lastError),
      hint: `${f.endpointDown.failures} failed request(s); the next probe is due`,
    });
  if (f.lastRetry)
    errors.push({
      at: f.lastRetry.at,
      source: 'webhook',
      message: `${f.lastRetry.id}: ${nums(f.lastRetry.error)}`,
      hint: 'retried automatically; `pulsa-bridge queue ls` shows the pending records',
    });
  if (s.spool.lastError)
    errors.push({
      at: s.spool.lastError.at,
      source: 'spool',
      message: `${s.spool.lastError.id}: ${nums(s.spool.lastError.error)}`,
    });
  if (s.spool.dead > 0)
    errors.push({
      source: 'spool',
      message: `${s.spool.dead} record(s) dead (the webhook refused them or they expired)`,
      hint: '`pulsa-bridge queue ls --area dead` shows why; `pulsa-bridge queue retry --dead` sends them again',
    });
  const canaries = s.canaries?.map((c) => canaryView(c, i.showNumbers, nums));
  for (const c of s.canaries ?? []) {
    const r = c.lastRun;
    if (r && r.outcome !== 'approved')
      errors.push({
        at: r.at,
        source: `canary ${c.name}`,
        // The order id as it is (an id, not a number of a person: masking would garble it); the detail masked.
        message: `${r.outcome}${r.orderId ? ` (order ${r.orderId})` : ''}${r.detail ? `: ${nums(r.detail)}` : ''}`,
        hint: c.state === 'paused' ? `\`pulsa-bridge canary resume ${c.name}\` once checked` : undefined,
      });
  }
  errors.sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
  return {
    version: s.version,
    startedAt: s.startedAt,
    generatedAt: new Date(i.nowMs).toISOString(),
    refreshMs: i.refreshMs,
    masked: { text: !i.showText, numbers: !i.showNumbers },
    health: {
      healthy: s.health.healthy,
      state: s.health.state ?? (s.health.healthy ? 'healthy' : 'unhealthy'),
      problems: s.health.problems.map((p) => ({
        code: p.code,
        modem: p.modem ?? null,
        message: nums(p.message),
        hint: p.hint ?? null,
      })),
      warnings: (s.health.warnings ?? []).map((p) => ({
        code: p.code,
        modem: p.modem ?? null,
        message: nums(p.message),
        hint: p.hint ?? null,
      })),
    },
    modems,
    spool: {
      pending: s.spool.pending,
      dead: s.spool.dead,
      quarantined: s.spool.quarantine,
      sent: s.spool.sent,
      ignored: s.spool.ignored,
      parts: s.spool.parts,
      oldestPendingAgeMs: s.spool.oldestPendingAgeMs ?? null,
    },
    webhook: {
      target: origin(s.webhookUrl),
      state: f.endpointDown ? 'failing' : 'answering',
      failingSince: f.endpointDown?.since ?? null,
      failures: f.endpointDown?.failures ?? 0,
      lastError: f.endpointDown ? nums(f.endpointDown.lastError) : null,
      nextProbeAt: f.endpointDown?.nextProbeAt ?? null,
      delivered: f.delivered,
      retried: f.retried,
      dead: f.dead,
      posting: f.inFlightId ?? null,
      nextRetryAt: f.nextWakeAt ?? null,
    },
    recent: i.recent.map((r) => ({
      id: r.id,
      receivedAt: r.receivedAt,
      modem: r.modem,
      sender: sender(r.sender, i.showNumbers),
      text: i.showText ? nums(r.text) : null,
      textLength: [...r.text].length,
      state: r.state,
      attempts: r.attempts,
      outcome: r.outcome === undefined ? null : nums(r.outcome),
    })),
    transfer: i.transfer ? transferView(i.transfer, nums, i.showText) : null,
    // null: no canary configured (the page shows no canary section).
    canaries: canaries ?? null,
    errors: errors.slice(0, 20),
  };
}

/** One canary for the page: its state, the day's spend and cap, the last run (outcome, time, order) and the next. */
function canaryView(c: CanaryStatus, showNumbers: boolean, nums: (t: string) => string): unknown {
  const r = c.lastRun;
  return {
    name: c.name,
    state: c.state,
    reason: c.reason === undefined ? null : nums(c.reason),
    pausedAt: c.pausedAt ?? null,
    from: c.from,
    to: nums(sender(c.to, showNumbers)),
    amount: c.amount,
    intervalSec: c.intervalSec,
    day: c.day,
    spentToday: c.spentToday,
    maxRupiahPerDay: c.maxRupiahPerDay,
    failuresInARow: c.failuresInARow,
    pauseAfterFailures: c.pauseAfterFailures,
    nextRunAt: c.nextRunAt ?? null,
    lastSuccessAt: c.lastSuccessAt ?? null,
    lastRun: r
      ? {
          at: r.at,
          outcome: r.outcome,
          orderId: r.orderId ?? null,
          detail: r.detail === undefined ? null : nums(r.detail),
          durationMs: r.durationMs ?? null,
        }
      : null,
  };
}

/** The report `pulsa-bridge test-transfer` left: its outcome and steps, numbers masked, the confirmation text per config. */
function transferView(t: Record<string, unknown>, nums: (s: string) => string, showText: boolean): unknown {
  const steps = Array.isArray(t.steps) ? (t.steps as Array<Record<string, unknown>>) : [];
  const conf = (t.confirmation ?? undefined) as Record<string, unknown> | undefined;
  const s = (x: unknown) => (typeof x === 'string' ? nums(x) : null);
  return {
    at: typeof t.at === 'string' ? t.at : null,
    from: s(t.from),
    to: s(t.to),
    amount: typeof t.amount === 'number' ? t.amount : null,
    operator: s(t.operator),
    outcome: s(t.outcome),
    totalMs: typeof t.totalMs === 'number' ? t.totalMs : null,
    steps: steps.map((x) => ({
      step: typeof x.step === 'number' ? x.step : null,
      description: s(x.description),
      status: s(x.status),
      detail: s(x.detail) ?? s(x.error),
    })),
    sent: Array.isArray(t.sent) ? (t.sent as unknown[]).map(s) : [],
    confirmation: conf
      ? { sender: s(conf.sender), text: showText ? s(conf.text) : null, spoolId: s(conf.spoolId) }
      : null,
  };
}
