// The status page's script: asks /api/status every few seconds and redraws. Every string from the daemon (modem
// replies, SMS senders and texts, errors) is set with textContent, never parsed as markup. Read-only: GET only.
'use strict';

const STATES = {
  running: ['ok', '✔', 'running'],
  connecting: ['warn', '…', 'connecting'],
  initialising: ['warn', '…', 'initialising'],
  'sim-not-ready': ['bad', '⚠', 'SIM not ready'],
  disconnected: ['bad', '✖', 'down: disconnected'],
  failed: ['bad', '✖', 'down: failed'],
  stopped: ['idle', '■', 'stopped'],
};
const SMS_STATES = {
  pending: ['warn', '…', 'pending'],
  retry: ['warn', '↻', 'retrying'],
  delivered: ['ok', '✔', 'delivered'],
  dead: ['bad', '✖', 'dead'],
};
const CANARY_STATES = {
  waiting: ['ok', '◷', 'waiting'],
  running: ['ok', '▶', 'running'],
  paused: ['warn', '‖', 'paused'],
  capped: ['idle', '■', 'capped today'],
  disabled: ['warn', '✖', 'disabled'],
};
const RUN_OUTCOMES = {
  approved: ['ok', '✔', 'approved'],
  failed: ['bad', '✖', 'failed'],
  timeout: ['bad', '⌛', 'timed out'],
  unknown: ['warn', '?', 'send unknown'],
};
const BALANCE_STATES = {
  ok: ['ok', '✔', 'ok'],
  warning: ['warn', '⚠', 'warning'],
  unknown: ['idle', '?', 'unknown'],
  error: ['bad', '✖', 'check failed'],
};

let lastOk = 0;
let refreshMs = 3000;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function badge(table, key) {
  const [cls, icon, label] = table[key] || ['idle', '?', String(key)];
  return el('span', `badge ${cls}`, `${icon} ${label}`);
}

function ago(iso) {
  if (!iso) return 'never';
  const ms = Date.now() - Date.parse(iso);
  if (!Number.isFinite(ms)) return String(iso);
  return `${duration(Math.max(0, ms))} ago`;
}

function duration(ms) {
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** `YYYY-MM-DD HH:MM:SS +HH:MM` in the viewer's zone: the one form every time on the page takes (as the CLI's). */
function localTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(Math.trunc(Math.abs(n))).padStart(2, '0');
  const ahead = -d.getTimezoneOffset();
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())} ${ahead < 0 ? '-' : '+'}${p(ahead / 60)}:${p(ahead % 60)}`;
}

function when(iso) {
  const t = el('time', null, ago(iso));
  if (iso) {
    t.dateTime = iso;
    t.title = localTime(iso);
  }
  return t;
}

function facts(pairs) {
  const dl = el('dl', 'facts');
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(el('dt', null, k));
    const dd = el('dd');
    if (v instanceof Node) dd.append(v);
    else dd.textContent = v === null ? '—' : String(v);
    dl.append(dd);
  }
  return dl;
}

function span(...parts) {
  const s = el('span');
  for (const p of parts) s.append(p instanceof Node ? p : document.createTextNode(String(p)));
  return s;
}

function bars(signal) {
  if (!signal) return 'not sampled yet';
  const b = el('span', 'bars');
  b.setAttribute('aria-hidden', 'true');
  for (let i = 1; i <= 5; i++) b.append(el('span', i <= signal.bars ? 'on' : ''));
  return span(b, `${signal.dbm === null ? 'unknown' : signal.dbm} dBm (${signal.bars}/5)`);
}

function rupiah(n) {
  return n === null || n === undefined ? 'unknown' : `Rp ${Number(n).toLocaleString('id-ID')}`;
}

function modemCard(m) {
  const [cls] = STATES[m.state] || ['idle'];
  const card = el('article', `card ${cls}`);
  card.dataset.modem = m.name;
  const h = el('h3');
  h.append(el('span', 'name', m.name), badge(STATES, m.state));
  card.append(h);
  const reg = m.registration ? `${m.registration.registered ? '✔' : '✖'} ${m.registration.text}` : 'not sampled yet';
  const up = m.state === 'running';
  const rows = [
    up ? ['since', when(m.since)] : ['down since', when(m.downSince || m.since)],
    // The network and the signal only while the modem is connected: an old sample is not its state.
    ...(up
      ? [
          ['signal', bars(m.signal)],
          ['network', `${reg}${m.operator ? `, ${m.operator}` : ''}`],
        ]
      : []),
    ['SIM number', m.number],
    ['device', m.device],
    ['last SMS', when(m.lastSmsAt)],
    ['received', `${m.received} (spooled ${m.spooled})`],
    ['reconnects', m.reconnects],
  ];
  if (m.balance) {
    const b = m.balance;
    rows.push(['balance', span(badge(BALANCE_STATES, b.state), ` ${rupiah(b.rupiah)}`)]);
    rows.push(['active until', b.activeUntil]);
    rows.push(['checked', when(b.checkedAt)]);
  } else rows.push(['balance', 'no check configured or none yet']);
  if (m.ussd)
    rows.push([
      'USSD',
      span(el('span', 'badge warn', '☎ session open'), ` ${m.ussd.owner}, since `, when(m.ussd.openedAt)),
    ]);
  if (m.task) rows.push(['AT task', m.task]);
  card.append(facts(rows));
  if (m.lastError) card.append(el('p', 'hint', `last error: ${m.lastError}`));
  if (m.hint) card.append(el('p', 'hint', `hint: ${m.hint}`));
  if (m.balance) for (const r of m.balance.reasons) card.append(el('p', 'hint', `⚠ ${r}`));
  if (m.balance && m.balance.hint) card.append(el('p', 'hint', `hint: ${m.balance.hint}`));
  return card;
}

function spoolCards(s, w) {
  const spool = el('article', `card ${s.dead > 0 ? 'bad' : s.pending > 0 ? 'warn' : 'ok'}`);
  spool.append(el('h3', null, 'Spool'));
  spool.append(
    facts([
      ['pending', s.pending],
      ['oldest pending', s.oldestPendingAgeMs === null ? '—' : duration(s.oldestPendingAgeMs)],
      ['dead', `${s.dead}${s.dead > 0 ? ' ✖' : ''}`],
      ['quarantined', s.quarantined],
      ['sent', s.sent],
      ['ignored', s.ignored],
    ]),
  );
  const hook = el('article', `card ${w.state === 'failing' ? 'bad' : 'ok'}`);
  const h = el('h3', null, 'Webhook');
  h.append(w.state === 'failing' ? el('span', 'badge bad', '✖ failing') : el('span', 'badge ok', '✔ answering'));
  hook.append(h);
  const rows = [['target', w.target]];
  if (w.state === 'failing') {
    rows.push(
      ['failing since', when(w.failingSince)],
      ['failures', w.failures],
      ['last error', w.lastError],
      ['next probe', w.nextProbeAt ? localTime(w.nextProbeAt) : '—'],
    );
  }
  rows.push(['delivered', w.delivered], ['retried', w.retried], ['dead', w.dead]);
  if (w.posting) rows.push(['posting', w.posting]);
  hook.append(facts(rows));
  return [spool, hook];
}

function smsItem(r) {
  const li = el('li');
  li.dataset.id = r.id;
  const row = el('div', 'row');
  row.append(badge(SMS_STATES, r.state), when(r.receivedAt), el('span', 'muted', r.modem));
  const from = el('span', 'sender');
  from.textContent = `from ${r.sender}`;
  row.append(from, el('span', 'muted', `${r.attempts} attempt${r.attempts === 1 ? '' : 's'}`));
  li.append(row);
  li.append(
    el(
      'p',
      r.text === null ? 'text muted' : 'text',
      r.text === null ? `(text hidden, ${r.textLength} characters)` : r.text,
    ),
  );
  if (r.outcome) li.append(el('p', 'hint muted', r.outcome));
  return li;
}

/** `6 h`, `15 min`, `90 s` (a no-break space: the unit stays with its number on a phone). */
function every(sec) {
  if (sec >= 3600 && sec % 3600 === 0) return `${sec / 3600}\u00a0h`;
  if (sec >= 60 && sec % 60 === 0) return `${sec / 60}\u00a0min`;
  return `${sec}\u00a0s`;
}

/** One canary, one row: state, the day's spend against the cap, the last run (outcome, when, order), the next run. */
function canaryItem(c) {
  const li = el('li');
  li.dataset.canary = c.name;
  const head = el('div', 'row');
  head.append(
    badge(CANARY_STATES, c.state),
    el('strong', null, c.name),
    el(
      'span',
      'muted',
      `${rupiah(c.amount)} from ${c.from} ${c.to === 'order' ? 'through a reseller order' : `to ${c.to}`}, every ${every(c.intervalSec)}`,
    ),
  );
  const row = el('div', 'row');
  row.append(el('span', 'spent', `today ${rupiah(c.spentToday)} of ${rupiah(c.maxRupiahPerDay)}`));
  const last = el('span', 'last');
  if (c.lastRun) {
    last.append('last run ', badge(RUN_OUTCOMES, c.lastRun.outcome), ' ', when(c.lastRun.at));
    if (c.lastRun.orderId) last.append(`, order ${c.lastRun.orderId}`);
  } else last.append('last run: none yet');
  row.append(last);
  const next = c.nextRunAt
    ? `next run ${localTime(c.nextRunAt)}`
    : c.state === 'running'
      ? 'running now'
      : c.state === 'paused'
        ? 'next run: none until resumed'
        : c.state === 'disabled'
          ? 'next run: none (its ledger cannot be read)'
          : 'next run: —';
  row.append(el('span', 'next', next));
  li.append(head, row);
  if (c.reason) li.append(el('p', 'hint', `${c.state === 'paused' ? 'paused' : 'why'}: ${c.reason}`));
  if (c.lastRun && c.lastRun.outcome !== 'approved') {
    if (c.lastRun.detail) li.append(el('p', 'hint muted', c.lastRun.detail));
    li.append(
      el(
        'p',
        'hint muted',
        `last approved ${c.lastSuccessAt ? localTime(c.lastSuccessAt) : 'never'}; ${c.failuresInARow} of ${c.pauseAfterFailures} failures in a row before it pauses itself`,
      ),
    );
  }
  return li;
}

function transferBlock(t) {
  if (!t) return el('p', 'note', 'none yet (pulsa-bridge test-transfer keeps its report here)');
  const ok = t.outcome === 'confirmed' || t.outcome === 'sent';
  const card = el('article', `card ${ok ? 'ok' : 'bad'}`);
  const h = el('h3', null, `${t.operator || ''} ${t.amount === null ? '' : rupiah(t.amount)}`.trim());
  h.append(el('span', `badge ${ok ? 'ok' : 'bad'}`, `${ok ? '✔' : '✖'} ${t.outcome}`));
  card.append(h);
  card.append(
    facts([
      ['when', when(t.at)],
      ['from', t.from],
      ['to', t.to],
      ['took', t.totalMs === null ? '—' : `${(t.totalMs / 1000).toFixed(1)} s`],
    ]),
  );
  const ol = el('ol', 'list');
  for (const s of t.steps)
    ol.append(
      el('li', null, `${s.status === 'ok' ? '✔' : '✖'} ${s.description || ''}${s.detail ? `: ${s.detail}` : ''}`),
    );
  card.append(ol);
  if (t.confirmation)
    card.append(
      el(
        'p',
        'hint',
        `confirmation from ${t.confirmation.sender}${t.confirmation.text ? `: ${t.confirmation.text}` : ''}`,
      ),
    );
  return card;
}

function replace(id, nodes) {
  const node = document.getElementById(id);
  node.replaceChildren(...nodes);
  return node;
}

function render(d) {
  refreshMs = d.refreshMs || refreshMs;
  const v = document.getElementById('verdict');
  const warnings = d.health.warnings || [];
  const state = d.health.state || (d.health.healthy ? 'healthy' : 'unhealthy');
  const count = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;
  v.className = `verdict ${state === 'healthy' ? 'ok' : state === 'degraded' ? 'warn' : 'bad'}`;
  v.textContent =
    state === 'healthy'
      ? '✔ healthy'
      : state === 'degraded'
        ? `⚠ degraded: ${count(warnings.length, 'warning')} (money flows)`
        : `✖ UNHEALTHY: ${count(d.health.problems.length, 'problem')}`;
  document.getElementById('meta').textContent =
    `version ${d.version}, running since ${localTime(d.startedAt)}; updated ${localTime(d.generatedAt)}`;
  const problems = document.getElementById('problems');
  problems.hidden = d.health.problems.length === 0 && warnings.length === 0;
  const item = (mark, p) => {
    const li = el('li', null, `${mark} ${p.message}`);
    if (p.hint) li.append(el('p', 'hint', `hint: ${p.hint}`));
    return li;
  };
  replace('problem-list', [...d.health.problems.map((p) => item('✖', p)), ...warnings.map((p) => item('⚠', p))]);
  replace('modems', d.modems.map(modemCard));
  replace('spool', spoolCards(d.spool, d.webhook));
  const masked = [d.masked.text && 'message text', d.masked.numbers && 'phone numbers'].filter(Boolean);
  document.getElementById('masked-note').textContent = masked.length
    ? `${masked.join(' and ')} hidden (metrics.page.showText / showNumbers)`
    : '';
  replace('recent', d.recent.length ? d.recent.map(smsItem) : [el('li', 'muted', 'none since the daemon started')]);
  // No canary configured (null): no section at all.
  document.getElementById('canaries-section').hidden = !d.canaries;
  replace('canaries', (d.canaries || []).map(canaryItem));
  replace('transfer', [transferBlock(d.transfer)]);
  replace(
    'errors',
    d.errors.length
      ? d.errors.map((e) => {
          const li = el('li');
          const row = el('div', 'row');
          row.append(el('strong', null, e.source), e.at ? when(e.at) : '');
          li.append(row, el('p', 'text', e.message));
          if (e.hint) li.append(el('p', 'hint', `hint: ${e.hint}`));
          return li;
        })
      : [el('li', 'muted', 'none')],
  );
}

async function refresh() {
  try {
    const res = await fetch('/api/status', { cache: 'no-store', credentials: 'same-origin' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    render(await res.json());
    lastOk = Date.now();
    document.body.classList.remove('stale');
  } catch (err) {
    document.body.classList.add('stale');
    document.getElementById('meta').textContent =
      `cannot reach the daemon (${err.message}); last update ${lastOk ? ago(new Date(lastOk).toISOString()) : 'never'}`;
  } finally {
    setTimeout(refresh, refreshMs);
  }
}

refresh();
