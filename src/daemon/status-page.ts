/**
 * The status page's JSON (metrics/page-view.ts) from the daemon's one snapshot: serialised at most once per snapshot,
 * so many open pages cost one build per snapshot. Keeps the page's list of the last SMS (seeded with the pending
 * records, fed by the daemon's `sms` and `delivery` events) and reads the CLI's last test-transfer report.
 */
import { stat } from 'node:fs/promises';
import type { Config } from '../config.js';
import type { EventMessage } from '../control/protocol.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { buildPageView } from '../metrics/page-view.js';
import { RecentSmsList } from '../metrics/recent-sms.js';
import { diskOps } from '../spool/files.js';
import type { Spool } from '../spool/store.js';
import type { StatusSnapshot } from '../status.js';
import { transferReportPath } from './status-file.js';

/** How often the status page asks for its JSON. */
const PAGE_REFRESH_MS = 3_000;

export interface StatusPageSources {
  config: Config;
  spool: Pick<Spool, 'list'>;
  snapshot(): Promise<StatusSnapshot>;
  /** The USSD session open on a modem, if any. */
  ussdOpen(modem: string): { owner: string; openedAt: string } | undefined;
  logger: Logger;
}

export interface StatusPage {
  /** The page's JSON now. */
  body(): Promise<string>;
  /** The daemon's events: `sms` and `delivery` update the page's list (the caller renews the snapshot). */
  onEvent(event: EventMessage): void;
}

export async function createStatusPage(o: StatusPageSources): Promise<StatusPage> {
  const { config } = o;
  const recent = new RecentSmsList(config.metrics.page.recent);
  recent.seed(
    (await o.spool.list('pending', { limit: config.metrics.page.recent })).flatMap((r) =>
      r.kind === 'sms' ? [r] : [],
    ),
  );
  const configured = new Map(config.modems.map((m) => [m.name, { number: m.number, operator: m.operator }]));
  const reportFile = transferReportPath(config.spool.dir);
  let transfer: { mtimeMs: number; value: Record<string, unknown> | undefined } | undefined;
  const readTransfer = async () => {
    try {
      const st = await stat(reportFile);
      if (transfer?.mtimeMs !== st.mtimeMs)
        transfer = {
          mtimeMs: st.mtimeMs,
          value: JSON.parse(await diskOps.readText(reportFile)) as Record<string, unknown>,
        };
    } catch (err) {
      // No test transfer yet (ENOENT), or a report being rewritten: the page shows none / the previous one.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') transfer = undefined;
      else o.logger.debug({ err }, `status page: ${reportFile} not read: ${errorMessage(err)}`);
    }
    return transfer?.value;
  };
  let built: { from: Promise<StatusSnapshot>; body: Promise<string> } | undefined;
  return {
    onEvent: (event) => {
      if (event.event === 'sms' || event.event === 'delivery') recent.onEvent(event);
    },
    body: () => {
      const from = o.snapshot();
      if (built?.from !== from) {
        const body = (async () => {
          const [snapshot, report] = await Promise.all([from, readTransfer()]);
          return JSON.stringify(
            buildPageView({
              snapshot,
              nowMs: Date.now(),
              configured,
              ussd: o.ussdOpen,
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
    },
  };
}
