/**
 * Opens a configured modem for `balance` and `test-transfer` on the port directly: stands in for the CLI's target
 * resolution (target.ts `openTarget`, daemon first, then the port) until it lands here; the commands only see the
 * ModemOps. A modem with `simulate: true` is a virtual modem on one virtual network per CLI invocation, with the
 * number, operator and balance of its config (so two simulated modems can transfer to each other without a daemon).
 * Contract: what is opened is released by the ModemOps' close(); SMS are listed from the SIM, never deleted.
 */
import type { Config } from '../config.js';
import type { ModemOps, StoredSmsView, UssdOutcome } from '../control/ops.js';
import { silentLogger } from '../log.js';
import type { Modem } from '../modem/modem.js';
import { ussdStatusText, type UssdReply } from '../modem/ussd-session.js';
import { VirtualNetwork } from '../sim/operator-network.js';
import { VirtualModem } from '../sim/virtual-modem.js';
import { decodeDeliver } from '../sms/pdu.js';
import { encodeSubmit } from '../sms/submit.js';
import type { OpenOps } from './balance.js';
import { openSession } from './session.js';
import { UsageError } from './usage.js';

function outcome(r: UssdReply): UssdOutcome {
  return { status: r.status, statusText: ussdStatusText(r.status), text: r.text, raw: r.raw, ...(r.dcs !== undefined ? { dcs: r.dcs } : {}) };
}

/** The ModemOps a transfer or a balance check needs, over a Modem this process holds (`at` and SMS deletion are not offered). */
export function modemOpsOver(name: string, modem: Modem, close: () => Promise<void>): ModemOps {
  const unsupported = (what: string) => () => Promise.reject(new Error(`${what} is not offered on this path`));
  return {
    name,
    path: 'direct',
    info: async () => ({ ...(await modem.info()) }),
    at: unsupported('at'),
    ussdOpen: async (code, o) => outcome(await modem.ussd(code, o)),
    ussdReply: async (text, o) => outcome(await modem.ussdReply(text, o)),
    ussdCancel: () => modem.ussdCancel(),
    smsList: async (which) => {
      const out: StoredSmsView[] = [];
      for (const p of await modem.listSms(which)) {
        const d = decodeDeliver(p);
        const base = { index: p.index, status: p.stat === 0 ? 'unread' : 'read', pdu: p.pdu };
        out.push(d.ok ? { ...base, sender: d.sms.originator, text: d.sms.text, time: d.sms.scTimestamp } : { ...base, error: d.reason });
      }
      return out;
    },
    smsRead: unsupported('sms read'),
    smsDelete: unsupported('sms delete'),
    smsSend: async (to, text) => {
      const refs = await modem.sendSms(to, encodeSubmit(to, text));
      return { parts: refs.length, references: refs };
    },
    onEvent: async () => () => undefined,
    close,
  };
}

/** An opener whose simulated modems share one virtual network. */
export function directOpener(): OpenOps {
  let network: VirtualNetwork | undefined;
  return async (config: Config, name: string) => {
    const m = config.modems.find((x) => x.name === name);
    if (!m) throw new UsageError(`no modem named ${JSON.stringify(name)} in the config`);
    const virtualModem = (path: string) => {
      network ??= new VirtualNetwork();
      const line = m.number && m.operator ? network.join({ number: m.number, operator: m.operator, ...(m.virtual ?? {}) }) : undefined;
      const vm = new VirtualModem({ path, profile: 'simcom', bootStepMs: 0, ...(line ? { ussdMenus: line.ussdMenus, onSmsSubmitted: line.onSmsSubmitted, identity: { ownNumber: line.ownNumber } } : {}) });
      line?.connect(vm);
      vm.start();
      return vm;
    };
    const session = await openSession({
      port: m.port, // a simulated modem's is /virtual/<name>
      baud: m.baudRate,
      simulate: m.simulate,
      ...(m.profile !== 'auto' ? { profile: m.profile } : {}),
      ...(m.pin ? { pin: m.pin } : {}),
      ...(m.simulate ? {} : { stateDir: config.stateDir ?? config.spool.dir }), // the daemon's memory of rejected PINs
      timeoutMs: m.commandTimeoutMs,
      logger: silentLogger(),
      ...(m.simulate ? { virtualModem } : {}),
    });
    try {
      await session.modem.init();
    } catch (err) {
      await session.close();
      throw err;
    }
    return modemOpsOver(name, session.modem, () => session.close());
  };
}
