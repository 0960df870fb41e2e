/**
 * Integration harness for the receive path: the production wiring (createModemSupervisor) over the virtual modem and
 * a real spool directory, with an optional fault-injecting spool wrapper to stop the process at a chosen point.
 */
import { parseConfig, type ModemConfig } from '../../src/config.js';
import { createModemSupervisor } from '../../src/daemon/modem-wiring.js';
import { receiveSpool } from '../../src/daemon/spool-events.js';
import type { Logger } from '../../src/log.js';
import type { ReceiveSpool } from '../../src/receive/receiver.js';
import { Spool } from '../../src/spool/store.js';
import type { SmsRecord } from '../../src/spool/types.js';
import { VirtualModem, type VirtualModemOptions } from '../../src/virtual-modem/virtual-modem.js';
import { until } from '../support/until.js';

export class SimulatedCrash extends Error {
  constructor(point: string) {
    super(`simulated crash: ${point}`);
  }
}

export interface Faults {
  /** Throw before the pending record is written (the process died between read and spool write). */
  beforePendingWrite?: (rec: SmsRecord) => boolean;
  /** Write the pending record durably, then throw (died between spool write and AT+CMGD). */
  afterPendingWrite?: (rec: SmsRecord) => boolean;
}

export function withFaults(spool: Spool, faults: Faults): ReceiveSpool {
  return receiveSpool(spool, async (rec) => {
    if (faults.beforePendingWrite?.(rec)) throw new SimulatedCrash('before spool write');
    const r = await spool.putPending(rec);
    if (faults.afterPendingWrite?.(rec)) throw new SimulatedCrash('after spool write, before delete');
    return r;
  });
}

export function modemConfig(over: Record<string, unknown> = {}): ModemConfig {
  return parseConfig(
    {
      webhook: { url: 'http://127.0.0.1:9/unused' },
      modems: [{ name: 'tsel-1', port: 'virtual:tsel-1', senders: ['858', 'TELKOMSEL'], ...over }],
    },
    {},
  ).modems[0]!;
}

export interface Stack {
  spool: Spool;
  supervisor: ReturnType<typeof createModemSupervisor>;
  stop(): Promise<void>;
}

export async function startStack(
  dir: string,
  vm: VirtualModem,
  logger: Logger,
  opts: { faults?: Faults; modem?: Record<string, unknown>; livenessIntervalMs?: number } = {},
): Promise<Stack> {
  const spool = await Spool.open(dir, { logger });
  const m = modemConfig(opts.modem);
  const supervisor = createModemSupervisor(m, {
    spool: opts.faults ? withFaults(spool, opts.faults) : spool,
    logger,
    path: vm.start(),
    ...(opts.livenessIntervalMs ? { livenessIntervalMs: opts.livenessIntervalMs } : {}),
  });
  supervisor.start();
  await until(() => supervisor.status().state === 'running', 'modem running', 10_000);
  return {
    spool,
    supervisor,
    stop: async () => {
      await supervisor.stop();
      await spool.close();
    },
  };
}

export function virtualModem(path: string, over: Partial<VirtualModemOptions> = {}): VirtualModem {
  return new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, ...over });
}

/** Waits until the receiver has nothing queued and the SIM holds `simCount` messages. */
export async function settle(stack: Stack, vm: VirtualModem, simCount = 0, timeoutMs = 10_000): Promise<void> {
  await until(() => vm.storedMessages().length === simCount, `SIM to hold ${simCount}`, timeoutMs);
  await stack.supervisor.currentReceiver()?.drained();
}

export async function pendingRecords(spool: Spool): Promise<SmsRecord[]> {
  return (await spool.list('pending')).filter((r): r is SmsRecord => r.kind === 'sms');
}
