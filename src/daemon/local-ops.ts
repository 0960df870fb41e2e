/**
 * A modem's TransferOps inside the daemon, for its canaries: USSD through the modem's one broker under an owner of the
 * run's own (an operator's session and a canary never interleave; the broker answers `busy` naming the holder), SMS
 * sent and listed as operator tasks on the modem's scheduler (one task per part, as the control socket does), events
 * from the daemon's own fan-out (the modem's SMS, every delivery). close() cancels the run's session if one is open.
 */
import type { AtChannel } from '../at/types.js';
import type { EventMessage } from '../control/protocol.js';
import type { Modem } from '../modem/modem.js';
import type { AtScheduler } from '../modem/scheduler.js';
import { encodeForSend, listSlots } from '../ops/actions.js';
import type { TransferOps } from '../ops/modem-ops.js';
import type { UssdBroker } from '../ops/ussd-broker.js';

export interface LocalModem {
  name: string;
  scheduler: AtScheduler<{ readonly modem: Modem; readonly channel: AtChannel }>;
  ussd: UssdBroker;
}

let owners = 0;

export function localTransferOps(
  m: LocalModem,
  subscribe: (listener: (e: EventMessage) => void) => () => void,
  ownerLabel: string,
): TransferOps {
  const owner = { id: `local-${++owners}`, label: ownerLabel };
  const task = <R>(label: string, fn: (modem: Modem) => Promise<R>) =>
    m.scheduler.schedule({ priority: 'operator', label: `${ownerLabel}: ${label}` }, (ctx) => fn(ctx.target.modem));
  return {
    name: m.name,
    path: 'daemon',
    ussdOpen: (code, o) => m.ussd.open(owner, code, o ?? {}),
    ussdReply: (text, o) => m.ussd.reply(owner, text, o ?? {}),
    ussdCancel: () => m.ussd.cancel(owner),
    async smsSend(to, text) {
      const pdus = encodeForSend(to, text);
      const references: number[] = [];
      for (const [i, part] of pdus.entries()) {
        const [ref] = await task(`sms send part ${i + 1}/${pdus.length}`, (modem) => modem.sendSms(to, [part]));
        references.push(ref ?? -1);
      }
      return { parts: pdus.length, references };
    },
    smsList: (which = 'all') => task('sms list', (modem) => listSlots(modem, which)),
    onEvent: (listener) =>
      Promise.resolve(
        subscribe((e) => {
          if (e.modem === undefined || e.modem === m.name) listener(e);
        }),
      ),
    async close() {
      await m.ussd.cancel(owner).catch(() => undefined); // best effort: the broker's idle timeout ends it anyway
    },
  };
}
