/**
 * The shipped monitoring files (monitoring/): the alert rules pass `promtool check rules` where promtool is installed
 * (Debian's `prometheus` package), the canary alerts fire when they should on made-up series (`promtool test rules`,
 * test/fixtures/monitoring/), and every series that the rules and the Grafana dashboard query (pulsa_bridge_*, and the
 * process_* / nodejs_* ones of the Node.js process) is one the daemon exports (names read from the real registry), so
 * a renamed metric cannot silently blind an alert; every dashboard query parses as PromQL (promtool).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BridgeMetrics } from '../../src/metrics/registry.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rulesFile = path.join(root, 'monitoring/alerts.yml');
const canaryRulesTest = path.join(root, 'test/fixtures/monitoring/canary-alerts.yml');
const dashboardFile = path.join(root, 'monitoring/grafana-dashboard.json');
const hasPromtool = spawnSync('sh', ['-c', 'command -v promtool']).status === 0;

/** Every series name the daemon's registry exports (with the Node.js process metrics, on in the daemon). */
function exportedNames(): Set<string> {
  const m = new BridgeMetrics(
    {
      version: '0.0.0',
      snapshot: async () => ({
        modems: [],
        forwarder: { delivered: 0, retried: 0, dead: 0 },
        spool: { pending: 0, sent: 0, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
        health: { healthy: true },
      }),
    },
    { defaultMetrics: true },
  );
  const names = new Set<string>();
  for (const metric of m.registry.getMetricsAsArray()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(metric.name + s);
  }
  return names;
}

const referenced = (text: string): string[] => [
  ...new Set(text.match(/\b(?:pulsa_bridge|process|nodejs)_[a-z_]+/g) ?? []),
];

describe('monitoring/', () => {
  it.skipIf(!hasPromtool)('alerts.yml passes promtool check rules', () => {
    const r = spawnSync('promtool', ['check', 'rules', rulesFile], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });

  it.skipIf(!hasPromtool)(
    'the canary alerts fire on a stale or a never-approved canary (2 intervals of uptime) and on a pause, not before',
    () => {
      const r = spawnSync('promtool', ['test', 'rules', canaryRulesTest], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toContain('SUCCESS');
      expect(r.status).toBe(0);
    },
  );

  it('alerts.yml has the alerts the issue asks for, each with a severity and a summary', () => {
    const text = readFileSync(rulesFile, 'utf8');
    const alerts = [...text.matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'PulsaBridgeModemDown',
        'PulsaBridgePendingTooOld',
        'PulsaBridgeSimActivePeriodEnding',
        'PulsaBridgeBalanceLow',
        'PulsaBridgeDeadRecords',
        'PulsaBridgeCanaryNotApproved',
        'PulsaBridgeCanaryPaused',
      ]),
    );
    expect(text.match(/^\s+severity: /gm)?.length).toBe(alerts.length);
    expect(text.match(/^\s+summary: /gm)?.length).toBe(alerts.length);
    expect(text).toMatch(
      /alert: PulsaBridgePendingTooOld\n\s+expr: pulsa_bridge_spool_oldest_pending_age_seconds > 300\n/,
    );
  });

  it.skipIf(!hasPromtool)('every dashboard query is valid PromQL (promtool checks it as a recording rule)', () => {
    const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr.replaceAll('$instance', '.*')));
    expect(exprs.length).toBeGreaterThan(20);
    const dir = mkdtempSync(path.join(tmpdir(), 'pulsa-dash-'));
    try {
      const file = path.join(dir, 'dashboard-queries.yml');
      const rules = exprs.map((e, i) => `      - record: dashboard_query_${i}\n        expr: ${JSON.stringify(e)}`);
      writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toContain(`SUCCESS: ${exprs.length} rules found`);
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the rules and the dashboard query only series the daemon exports', () => {
    const names = exportedNames();
    const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    const used = [...referenced(readFileSync(rulesFile, 'utf8')), ...referenced(exprs)];
    expect(used.length).toBeGreaterThan(10);
    expect(used).toEqual(
      expect.arrayContaining([
        'pulsa_bridge_canary_last_success_timestamp_seconds',
        'pulsa_bridge_canary_interval_seconds',
        'pulsa_bridge_canary_paused',
        'process_start_time_seconds',
      ]),
    );
    expect(used.filter((n) => !names.has(n))).toEqual([]);
  });

  it('every exported series follows the conventions: pulsa_bridge_ prefix, snake case, counters in _total, one _info', () => {
    const m = new BridgeMetrics(
      {
        version: '0.0.0',
        snapshot: async () => ({
          modems: [],
          forwarder: { delivered: 0, retried: 0, dead: 0 },
          spool: { pending: 0, sent: 0, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
          health: { healthy: true },
        }),
      },
      { defaultMetrics: false },
    );
    const metrics = m.registry.getMetricsAsArray();
    for (const x of metrics) {
      expect(x.name).toMatch(/^pulsa_bridge_[a-z0-9]+(_[a-z0-9]+)*$/);
      if (String(x.type) === 'counter') expect(x.name).toMatch(/_total$/);
      else expect(x.name).not.toMatch(/_total$/);
    }
    expect(metrics.filter((x) => x.name.endsWith('_info')).map((x) => x.name)).toContain('pulsa_bridge_build_info');
  });
});
