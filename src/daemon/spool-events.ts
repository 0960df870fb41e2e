/**
 * The spool as the receiver and the forwarder see it from the daemon: the same calls, each announcing what it did to
 * the control socket's subscribers (an I/O adapter over Spool; the daemon passes its ControlServer's broadcast).
 *
 * - receiveSpool: the receiver's view of a Spool (the five calls it makes), with its own putPending when given.
 * - spooledEvents: `sms` for every record newly written to pending (not for a duplicate of one already there).
 * - deliveryEvents: `delivery` for every recorded POST result (delivered, retry with its next attempt, dead), after the
 *   spool has recorded it.
 */
import type { EventMessage } from '../control/protocol.js';
import type { ForwardSpool } from '../forward/forwarder.js';
import type { ReceiveSpool } from '../receive/receiver.js';
import type { Spool } from '../spool/store.js';
import type { SmsRecord } from '../spool/types.js';

/** The receiver's view of `spool`, with `putPending` replaced when given (announcing, or failing on purpose in tests). */
export function receiveSpool(
  spool: Spool,
  putPending: ReceiveSpool['putPending'] = (rec) => spool.putPending(rec),
): ReceiveSpool {
  return {
    putPending,
    putIgnored: (rec) => spool.putIgnored(rec),
    putQuarantine: (rec) => spool.putQuarantine(rec),
    putPart: (rec) => spool.putPart(rec),
    listParts: () => spool.listParts(),
    deleteParts: (ids) => spool.deleteParts(ids),
  };
}

/** The receiver's spool, announcing each record newly written to pending (the control socket's `sms` events). */
export function spooledEvents(spool: Spool, publish: (e: EventMessage) => void): ReceiveSpool {
  return receiveSpool(spool, async (rec: SmsRecord) => {
    const r = await spool.putPending(rec);
    if (r.created)
      publish({
        v: 1,
        event: 'sms',
        modem: rec.sim.modem,
        data: { id: rec.id, modem: rec.sim.modem, sender: rec.sender, text: rec.text, receivedAt: rec.receivedAt },
      });
    return r;
  });
}

/** The forwarder's spool, announcing each recorded POST result (the control socket's `delivery` events). */
export function deliveryEvents(spool: Spool, publish: (e: EventMessage) => void): ForwardSpool {
  const event = (id: string, status: 'delivered' | 'retry' | 'dead', outcome: string) =>
    publish({ v: 1, event: 'delivery', data: { id, status, outcome } });
  return {
    pendingInOrder: () => spool.pendingInOrder(),
    isPending: (id) => spool.isPending(id),
    on: (name, fn) => spool.on(name, fn),
    off: (name, fn) => spool.off(name, fn),
    markDelivered: async (id, info) => {
      await spool.markDelivered(id, info);
      event(id, 'delivered', `HTTP ${info.status}`);
    },
    markRetry: async (id, info) => {
      await spool.markRetry(id, info);
      event(id, 'retry', `${info.error}; next attempt at ${info.nextAttemptAt.toISOString()}`);
    },
    markDead: async (id, reason, status) => {
      await spool.markDead(id, reason, status);
      event(id, 'dead', reason);
    },
  };
}
