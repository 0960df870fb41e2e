/**
 * The production wiring of one configured modem: serial link -> AT channel -> Modem -> Receiver, under a supervisor
 * that reconnects. Exported so integration tests and benchmarks run exactly what the daemon runs (with their own
 * spool). Creates I/O objects (links, channels) only through modem/factory.ts, as the composition root allows.
 */
import type { AtChannel, Urc } from '../at/types.js';
import type { ModemConfig } from '../config.js';
import { createSenderFilter } from '../filter/sender.js';
import type { Logger } from '../log.js';
import { createModem, openChannel } from '../modem/factory.js';
import type { Modem } from '../modem/modem.js';
import { AtScheduler } from '../modem/scheduler.js';
import type { RejectedPins } from '../modem/sim-unlock.js';
import { Receiver, type ReceiveSpool } from '../receive/receiver.js';
import { ModemSupervisor, type ModemHandle, type ModemIdentityLike } from '../modem/supervisor.js';

export interface ModemWiring {
  spool: ReceiveSpool;
  logger: Logger;
  /** The port opened (the config's; tests pass a virtual modem's `virtual:` path). */
  path: string;
  onStateChange?: () => void;
  /** Rejected SIM PINs, kept in the state directory (shared by every modem). */
  rejectedPins?: RejectedPins;
  /** Liveness probe interval (default 30 s); tests shorten it. */
  livenessIntervalMs?: number;
  /** Every URC of the modem of each connection (the control socket's `urc` events). */
  onUrc?: (urc: Urc) => void;
  /** Multipart parts of these modems are this one's to join too (modems renamed or removed in config). */
  adoptPartsOf?: (modem: string) => boolean;
  /** Each new receiver (after every (re)connect), for the metrics. */
  onReceiver?: (receiver: Receiver) => void;
}

/** One configured modem, wired (see the header). */
export function createModemSupervisor(m: ModemConfig, w: ModemWiring): ModemSupervisor<Modem, Receiver> {
  const log = w.logger.child({ modem: m.name });
  const filter = createSenderFilter(m.senders);
  return new ModemSupervisor<Modem, Receiver>({
    name: m.name,
    logger: w.logger,
    // One per configured modem, for the supervisor's whole life: every reconnect attaches its modem to it.
    scheduler: new AtScheduler<ModemHandle<Modem>>({ name: m.name }),
    ...(w.onStateChange ? { onStateChange: w.onStateChange } : {}),
    ...(w.livenessIntervalMs !== undefined
      ? {
          livenessIntervalMs: w.livenessIntervalMs,
          livenessTimeoutMs: Math.max(100, Math.floor(w.livenessIntervalMs / 2)),
        }
      : {}),
    connect: (): Promise<AtChannel> =>
      openChannel(
        { path: w.path, baudRate: m.baudRate },
        { logger: log.child({ stage: 'at' }), defaultTimeoutMs: m.commandTimeoutMs, name: m.name },
      ),
    createModem: (channel) => {
      const modem = createModem(channel, {
        name: m.name,
        logger: w.logger,
        ...(m.pin ? { pin: m.pin } : {}),
        ...(w.rejectedPins ? { rejectedPins: w.rejectedPins } : {}),
        profile: m.profile,
        storage: m.storage,
        delivery: m.delivery,
      });
      if (w.onUrc) modem.on('urc', w.onUrc);
      return modem;
    },
    createReceiver: (modem, identity: ModemIdentityLike, scheduler) => {
      const receiver = new Receiver({
        modem,
        scheduler,
        spool: w.spool,
        sim: {
          modem: m.name,
          ...(identity.imsi ? { imsi: identity.imsi } : {}),
          ...(identity.iccid ? { iccid: identity.iccid } : {}),
          ...(identity.imei ? { imei: identity.imei } : {}),
        },
        accept: filter,
        otherSenders: m.otherSenders,
        multipartTimeoutMs: m.multipartTimeoutSec * 1000,
        sweepIntervalMs: m.sweepIntervalSec * 1000,
        logger: w.logger.child({ stage: 'receive' }),
        ...(w.adoptPartsOf ? { adoptPartsOf: w.adoptPartsOf } : {}),
        // Right after a sweep's listing the count is known without AT+CPMS? (the idle budget).
        storageUsage: () => modem.receiveUsage(2_000),
      });
      w.onReceiver?.(receiver);
      return receiver;
    },
  });
}
