/**
 * The demo's third act (`npm run demo`): the daemon's canary, run now by the operator's `pulsa-bridge canary run`
 * (its own `bin/pulsa-bridge` process, through the control socket), between the two virtual modems against the
 * stand-in's reseller API and webhook; then `canary ls`. Returns true when the run ended approved, its confirmation
 * reached the webhook once, and the day's spend shows it. Demo only.
 */
import type { DemoReceiver } from './receiver.js';
import { command } from './transfer-demo.js';

export async function runCanaryDemo(o: {
  configFile: string;
  receiver: DemoReceiver;
  canary: string;
  out: (line: string) => void;
}): Promise<boolean> {
  const { receiver, out } = o;
  const before = receiver.received.length;
  out(`demo: $ pulsa-bridge canary run ${o.canary}`);
  const r = await command(['canary', 'run', o.canary, '-c', o.configFile, '--json']);
  if (r.err.trim()) out(`demo:   (stderr) ${r.err.trim()}`);
  let report: { outcome?: string; orderId?: string; spent?: number; durationMs?: number; lines?: string[] } = {};
  try {
    report = JSON.parse(r.out) as typeof report;
  } catch {
    out(`demo:   ${r.out.trim()}`);
  }
  for (const line of report.lines ?? []) out(`demo:   ${line}`);
  const confirmations = receiver.received.slice(before).filter((s) => s.approved === report.orderId);
  out(
    `demo: canary ${o.canary} ended ${report.outcome ?? '?'} (order ${report.orderId ?? '?'}, Rp ${report.spent ?? '?'} spent, ${((report.durationMs ?? 0) / 1000).toFixed(1)} s); its confirmation reached the webhook ${confirmations.length} time(s)`,
  );
  out('demo: $ pulsa-bridge canary ls');
  const ls = await command(['canary', 'ls', '-c', o.configFile]);
  for (const line of ls.out.trimEnd().split('\n')) out(`demo:   ${line}`);
  return r.code === 0 && report.outcome === 'approved' && confirmations.length === 1 && ls.code === 0;
}
