/**
 * PURE: the peer benchmark's results as a plain-text table, one column per peer and, after each gammu-smsd column,
 * its ratio to pulsa-bridge (gammu / bridge). A figure that was not measured prints as '-', and so does its ratio.
 */
import { ms, table } from '../stats.js';
import type { PeerResult } from './measure.js';

type Pick = (r: PeerResult) => number | undefined;

interface Row {
  label: string;
  pick: Pick;
  format: (v: number) => string;
  /** Text cells instead of a number (ratios make no sense): e.g. "29/30". */
  text?: (r: PeerResult) => string | undefined;
}

const fixed = (digits: number) => (v: number) => v.toFixed(digits);

function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return '-';
  if (b === 0) return a === 0 ? '-' : 'inf';
  const r = a / b;
  return `${r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2)}x`;
}

function rows(samples: number, idleSec: number, burst: PeerResult['burst'] | undefined): Row[] {
  const parts = burst ? ` (${burst.parts} parts)` : '';
  return [
    { label: `latency inject -> POST, median (ms, n=${samples})`, pick: (r) => r.latencyMs?.median, format: ms },
    { label: 'latency inject -> POST, p95 (ms)', pick: (r) => r.latencyMs?.p95, format: ms },
    {
      label: `burst of ${burst?.messages ?? 30}${parts}: all delivered (ms)`,
      pick: (r) => r.burst?.allDeliveredMs,
      format: ms,
    },
    {
      label: 'burst texts byte-exact',
      pick: () => undefined,
      format: String,
      text: (r) => (r.burst ? `${r.burst.byteExact}/${r.burst.messages}` : undefined),
    },
    {
      label: 'multipart texts byte-exact',
      pick: () => undefined,
      format: String,
      text: (r) => (r.burst ? `${r.burst.multipartByteExact}/${r.burst.multipart}` : undefined),
    },
    { label: 'AT commands per SMS, single phase', pick: (r) => r.atPerSmsSingle, format: fixed(1) },
    { label: 'AT commands per SMS, burst', pick: (r) => r.atPerSmsBurst, format: fixed(1) },
    { label: `AT commands per idle minute (${idleSec} s window)`, pick: (r) => r.atPerIdleMinute, format: fixed(0) },
    { label: 'CPU s, single + burst phases', pick: (r) => r.cpuWork?.self, format: fixed(2) },
    { label: '  incl. children (RunOnReceive: sh, jq, curl)', pick: (r) => r.cpuWork?.withChildren, format: fixed(2) },
    { label: 'CPU s per idle minute', pick: (r) => r.cpuIdlePerMinute?.self, format: fixed(2) },
    { label: 'peak RSS, VmHWM (MiB)', pick: (r) => r.peakRssMiB, format: fixed(1) },
    { label: 'duplicate POSTs', pick: () => undefined, format: String, text: (r) => String(r.duplicatePosts) },
  ];
}

/** `results[0]` is pulsa-bridge; the others are compared with it. */
export function peerTable(results: readonly PeerResult[], samples: number, idleSec: number): string {
  const [bridge, ...others] = results;
  if (!bridge) return '(no results)';
  const header = ['', bridge.label, ...others.flatMap((o) => [o.label, 'ratio'])];
  const body = rows(samples, idleSec, bridge.burst ?? others[0]?.burst).map((row) => {
    const cell = (r: PeerResult) => {
      if (row.text) return row.text(r) ?? '-';
      const v = row.pick(r);
      return v === undefined ? '-' : row.format(v);
    };
    return [
      row.label,
      cell(bridge),
      ...others.flatMap((o) => [cell(o), row.text ? '' : ratio(row.pick(o), row.pick(bridge))]),
    ];
  });
  return table(header, body);
}

/** Settings, idle command mix, mismatches and what could not be measured, one block per peer. */
export function peerNotes(results: readonly PeerResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    out.push(`${r.label}: ${r.settings}`);
    if (r.startupMs !== undefined) out.push(`  first SMS delivered ${(r.startupMs / 1000).toFixed(1)} s after start`);
    if (r.idleCommands?.length)
      out.push(`  idle, per minute: ${r.idleCommands.map(([c, n]) => `${c} ${n}`).join(', ')}`);
    if (r.workWallMs !== undefined)
      out.push(`  single + burst phases took ${(r.workWallMs / 1000).toFixed(1)} s of wall time`);
    for (const m of r.burst?.mismatches ?? []) out.push(`  not byte-exact: ${m}`);
    for (const n of r.notes) out.push(`  ${n.replace(/\n/g, '\n    ')}`);
  }
  return out.join('\n');
}
