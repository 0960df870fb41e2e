/**
 * The virtual modem's command table: every AT command it understands, as an ordered list of (anchored regex ->
 * handler, needs), first match wins, family extras after the standard ones; plus the modem-wide settings' handlers.
 * Needs are checked before a handler runs (`sms` before SMS Ready, `sim`, `network`). PDU mode only: text-mode
 * CMGL/CMGR/CMGS answer +CMS ERROR: 302 on purpose. Handlers answer synchronously; later work goes in Outcome.then.
 * No I/O and no timers here.
 */
import { OK, type CommandEntry, type ErrorSpec, type Needs, type Outcome } from './at-command.js';
import { formatAllowed, type SimProfile, type SimulatedIdentity } from './sim-profiles.js';
import type { SimCard } from './sim-card.js';
import type { SmsDelivery } from './sms-delivery.js';
import type { SmsStorage } from './sms-storage.js';
import type { UssdService } from './ussd-service.js';
import type { CnmiSettings } from './virtual-modem-types.js';

/** The modem's volatile settings: power-up values at every boot. */
export interface ModemSettings {
  echo: boolean;
  cmee: number;
  cmgf: number;
  cscs: string;
  cnmi: CnmiSettings;
  /** AT+CSMS: 0 = the modem acknowledges +CMT itself; 1 = it waits for AT+CNMA. */
  messageService: 0 | 1;
  cregN: number;
  fun: number;
  curc: boolean;
  smsReady: boolean;
  smsc: string;
}

export interface CommandContext {
  readonly settings: ModemSettings;
  readonly identity: SimulatedIdentity;
  readonly profile: SimProfile;
  readonly card: SimCard;
  readonly storage: SmsStorage;
  readonly delivery: SmsDelivery;
  readonly ussd: UssdService;
  /** AT+CFUN=1,1: power cycle (after the final result). */
  reboot(): void;
}

export class CommandTable {
  readonly entries: CommandEntry[];

  constructor(private readonly c: CommandContext) {
    this.entries = this.build();
  }

  private get s(): ModemSettings {
    return this.c.settings;
  }

  /** The error a command with these needs answers now (SMS not ready, SIM locked, not registered), else undefined. */
  checkNeeds(needs: Needs | undefined): ErrorSpec | undefined {
    if (!needs) return undefined;
    if (needs.sms && !this.s.smsReady) return 'ERROR';
    const simFamily = needs.sim ?? needs.network;
    if (simFamily) {
      const blocked = this.c.card.blockedError(simFamily);
      if (blocked) return blocked;
    }
    if (needs.network && !this.registered()) return needs.network === 'cme' ? { cme: 30 } : { cms: 331 };
    return undefined;
  }

  private registered(): boolean {
    return this.s.fun === 1 && this.c.card.ready && (this.c.identity.creg === 1 || this.c.identity.creg === 5);
  }

  private build(): CommandEntry[] {
    const id = this.c.identity;
    const sms: Needs = { sms: true, sim: 'cms' };
    const entries: CommandEntry[] = [
      { pattern: /^$/, run: () => OK },
      { pattern: /^(?:[EVQZH]\d?|&[FW]\d?)+$/i, run: (m) => this.basic(m[0]) },
      {
        pattern: /^I\d?$/i,
        run: () => ({
          lines: [
            `Manufacturer: ${id.manufacturer}`,
            `Model: ${id.model}`,
            `Revision: ${id.revision}`,
            `IMEI: ${id.imei}`,
          ],
        }),
      },
      { pattern: /^\+CMEE=([0-2])$/i, run: (m) => this.set(() => (this.s.cmee = Number(m[1]))) },
      { pattern: /^\+CMEE\?$/i, run: () => ({ lines: [`+CMEE: ${this.s.cmee}`] }) },
      { pattern: /^\+CMEE=\?$/i, run: () => ({ lines: ['+CMEE: (0-2)'] }) },
      { pattern: /^\+C?GMI$/i, run: () => ({ lines: [id.manufacturer] }) },
      { pattern: /^\+C?GMM$/i, run: () => ({ lines: [id.model] }) },
      { pattern: /^\+C?GMR$/i, run: () => ({ lines: [id.revision] }) },
      { pattern: /^\+C?GSN$/i, run: () => ({ lines: [id.imei] }) },
      { pattern: /^\+CIMI$/i, needs: { sim: 'cme' }, run: () => ({ lines: [id.imsi] }) },
      {
        pattern: /^\+CCID$/i,
        run: () =>
          this.c.card.state === 'absent' ? { error: { cme: 10 } } : { lines: [this.c.profile.ccidLine(id.iccid)] },
      },
      {
        pattern: /^\+CNUM$/i,
        needs: { sim: 'cme' },
        run: () => ({
          lines: id.ownNumber ? [`+CNUM: "","${id.ownNumber}",${id.ownNumber.startsWith('+') ? 145 : 129}`] : [],
        }),
      },
      { pattern: /^\+CPIN\?$/i, run: () => this.c.card.cpinQuery() },
      { pattern: /^\+CPIN=\?$/i, run: () => OK },
      { pattern: /^\+CPIN="?([0-9]*)"?(?:,"?([0-9]*)"?)?$/i, run: (m) => this.c.card.cpinEnter(m[1] ?? '', m[2]) },
      { pattern: /^\+CSQ$/i, run: () => ({ lines: [`+CSQ: ${this.s.fun === 1 ? id.csq.rssi : 99},${id.csq.ber}`] }) },
      { pattern: /^\+CSQ=\?$/i, run: () => ({ lines: ['+CSQ: (0-31,99),(0-7,99)'] }) },
      { pattern: /^\+C(E|G)?REG\?$/i, run: (m) => this.regQuery(m[1]) },
      { pattern: /^\+C(?:E|G)?REG=([0-2])$/i, run: (m) => this.set(() => (this.s.cregN = Number(m[1]))) },
      { pattern: /^\+C(?:E|G)?REG=\?$/i, run: (m) => ({ lines: [`${m[0].split('=')[0]}: (0-2)`] }) },
      { pattern: /^\+COPS\?$/i, run: () => this.copsQuery() },
      {
        pattern: /^\+COPS=\?$/i,
        needs: { sim: 'cme' },
        run: () => ({
          lines: [
            `+COPS: (2,"${id.operatorName}","${id.operatorName.slice(0, 4)}","${id.operatorNumeric}"${this.c.profile.copsWithAct ? ',2' : ''}),,(0-4),(0-2)`,
          ],
        }),
      },
      { pattern: /^\+COPS=[0-4](?:,.*)?$/i, needs: { sim: 'cme' }, run: () => OK },
      { pattern: /^\+CFUN\?$/i, run: () => ({ lines: [`+CFUN: ${this.s.fun}`] }) },
      { pattern: /^\+CFUN=\?$/i, run: () => ({ lines: ['+CFUN: (0,1,4),(0,1)'] }) },
      { pattern: /^\+CFUN=([014])(?:,([01]))?$/i, run: (m) => this.cfun(Number(m[1]), m[2] === '1') },
      { pattern: /^\+CSCS\?$/i, run: () => ({ lines: [`+CSCS: "${this.s.cscs}"`] }) },
      { pattern: /^\+CSCS=\?$/i, run: () => ({ lines: ['+CSCS: ("IRA","GSM","UCS2")'] }) },
      {
        pattern: /^\+CSCS="(IRA|GSM|UCS2)"$/i,
        run: (m) => this.set(() => (this.s.cscs = (m[1] ?? 'IRA').toUpperCase())),
      },
      // SMS (27.005)
      { pattern: /^\+CMGF\?$/i, needs: { sms: true }, run: () => ({ lines: [`+CMGF: ${this.s.cmgf}`] }) },
      { pattern: /^\+CMGF=\?$/i, needs: { sms: true }, run: () => ({ lines: ['+CMGF: (0,1)'] }) },
      { pattern: /^\+CMGF=([01])$/i, needs: { sms: true }, run: (m) => this.set(() => (this.s.cmgf = Number(m[1]))) },
      {
        pattern: /^\+CSCA\?$/i,
        needs: sms,
        run: () => ({ lines: [`+CSCA: "${this.s.smsc}",${this.s.smsc.startsWith('+') ? 145 : 129}`] }),
      },
      { pattern: /^\+CSCA="([+0-9]*)"(?:,\d+)?$/i, needs: sms, run: (m) => this.set(() => (this.s.smsc = m[1] ?? '')) },
      { pattern: /^\+CPMS=\?$/i, needs: sms, run: () => this.c.storage.cpmsSupported() },
      { pattern: /^\+CPMS\?$/i, needs: sms, run: () => this.c.storage.cpmsQuery() },
      { pattern: /^\+CPMS=(.+)$/i, needs: sms, run: (m) => this.c.storage.cpmsSet(m[1] ?? '') },
      {
        pattern: /^\+CNMI=\?$/i,
        needs: { sms: true },
        run: () => ({
          lines: [
            `+CNMI: ${this.c.profile.cnmiAllowed.map((v) => formatAllowed(v, this.c.profile.cnmiStyle)).join(',')}`,
          ],
        }),
      },
      {
        pattern: /^\+CNMI\?$/i,
        needs: { sms: true },
        run: () => ({ lines: [`+CNMI: ${Object.values(this.s.cnmi).join(',')}`] }),
      },
      { pattern: /^\+CNMI=([0-9,]*)$/i, needs: { sms: true }, run: (m) => this.cnmiSet(m[1] ?? '') },
      { pattern: /^\+CMGL=\?$/i, needs: sms, run: () => ({ lines: ['+CMGL: (0-4)'] }) },
      { pattern: /^\+CMGL(?:=(.*))?$/i, needs: sms, run: (m) => this.cmgl(m[1]) },
      { pattern: /^\+CMGR=(.*)$/i, needs: sms, run: (m) => this.cmgr(m[1] ?? '') },
      {
        pattern: /^\+CMGD=\?$/i,
        needs: sms,
        run: () => ({
          lines: [
            `+CMGD: (${this.c.storage
              .stored()
              .map((s) => s.index)
              .join(',')}),(0-4)`,
          ],
        }),
      },
      { pattern: /^\+CMGD=(\d+)(?:,(\d+))?$/i, needs: sms, run: (m) => this.cmgd(Number(m[1]), Number(m[2] ?? 0)) },
      { pattern: /^\+CNMA(?:=0)?$/i, needs: { sms: true }, run: () => this.c.delivery.cnma() },
      { pattern: /^\+CSMS=\?$/i, needs: { sms: true }, run: () => ({ lines: ['+CSMS: (0,1)'] }) },
      {
        pattern: /^\+CSMS\?$/i,
        needs: { sms: true },
        run: () => ({ lines: [`+CSMS: ${this.s.messageService},1,1,1`] }),
      },
      {
        pattern: /^\+CSMS=(\d+)$/i,
        needs: { sms: true },
        run: (m) => {
          const service = Number(m[1]);
          if (service > 1) return { error: { cms: 303 } };
          this.s.messageService = service as 0 | 1;
          return { lines: ['+CSMS: 1,1,1'] };
        },
      },
      { pattern: /^\+CMGS=(.*)$/i, needs: { sms: true, network: 'cms' }, run: (m) => this.cmgsStart(m[1] ?? '') },
      // USSD (27.007 §7.15)
      { pattern: /^\+CUSD\?$/i, run: () => ({ lines: [`+CUSD: ${this.c.ussd.cusdN}`] }) },
      { pattern: /^\+CUSD=\?$/i, run: () => ({ lines: ['+CUSD: (0-2)'] }) },
      { pattern: /^\+CUSD=([0-2])(?:,"([^"]*)"(?:,(\d+))?)?$/i, run: (m) => this.c.ussd.cusd(Number(m[1]), m[2]) },
      // ATD<code>; with a USSD code (`*888#`): what some modems need instead of AT+CUSD; the code goes as typed.
      { pattern: /^D([*#][0-9*#]*#)$/i, run: (m) => this.c.ussd.cusd(1, m[1], { dialled: true }) },
    ];
    if (this.c.profile.extras.includes('huawei-curc')) {
      entries.push(
        { pattern: /^\^CURC=([01])$/i, run: (m) => this.set(() => (this.s.curc = m[1] === '1')) },
        { pattern: /^\^CURC\?$/i, run: () => ({ lines: [`^CURC: ${this.s.curc ? 1 : 0}`] }) },
      );
    }
    entries.push(...this.c.card.vendorCommands(this.c.profile.extras));
    if (this.c.profile.extras.includes('huawei-iccid')) {
      entries.push({ pattern: /^\^ICCID\?$/i, needs: { sim: 'cme' }, run: () => ({ lines: [`^ICCID: ${id.iccid}`] }) });
    }
    return entries;
  }

  /** A plain setting: apply it, answer OK. */
  private set(apply: () => unknown): Outcome {
    apply();
    return OK;
  }

  private basic(commands: string): Outcome {
    for (const [, name = '', arg] of commands.toUpperCase().matchAll(/([EVQZH]|&[FW])(\d)?/g)) {
      if (name === 'E') this.s.echo = arg !== '0';
      else if (name === 'V' && arg === '0')
        return { error: 'ERROR' }; // numeric result codes are not simulated
      else if (name === 'Z' || name === '&F') {
        this.s.echo = true;
        this.s.cmee = 0;
      }
    }
    return OK;
  }

  private regQuery(kind: string | undefined): Outcome {
    const name = `+C${kind ? kind.toUpperCase() : ''}REG`;
    const stat = this.s.fun === 1 && this.c.card.ready ? this.c.identity.creg : 0;
    const extra = this.s.cregN === 2 ? ',"1A2B","00C3D4E5"' : '';
    return { lines: [`${name}: ${this.s.cregN},${stat}${extra}`] };
  }

  private copsQuery(): Outcome {
    if (!this.registered()) return { lines: ['+COPS: 0'] };
    return { lines: [`+COPS: 0,0,"${this.c.identity.operatorName}"${this.c.profile.copsWithAct ? ',2' : ''}`] };
  }

  private cfun(fun: number, reset: boolean): Outcome {
    if (reset) return { then: () => this.c.reboot() };
    this.s.fun = fun;
    return { then: () => this.c.delivery.flushHeld() };
  }

  private cnmiSet(args: string): Outcome {
    const keys = ['mode', 'mt', 'bm', 'ds', 'bfr'] as const;
    const values = args.split(',');
    if (values.length > keys.length) return { error: { cms: 303 } };
    const next = { ...this.s.cnmi };
    for (let i = 0; i < values.length; i++) {
      const raw = values[i] ?? '';
      const key = keys[i];
      if (raw === '' || key === undefined) continue;
      const v = Number(raw);
      if (!this.c.profile.cnmiAllowed[i]?.includes(v)) return { error: { cms: 303 } };
      next[key] = v;
    }
    this.s.cnmi = next;
    return OK;
  }

  private cmgl(arg: string | undefined): Outcome {
    if (this.s.cmgf === 1) return { error: { cms: 302 } };
    return this.c.storage.cmgl(arg);
  }

  private cmgr(arg: string): Outcome {
    if (this.s.cmgf === 1) return { error: { cms: 302 } };
    return this.c.storage.cmgr(arg);
  }

  private cmgd(index: number, flag: number): Outcome {
    const outcome = this.c.storage.cmgd(index, flag);
    if (outcome.error === undefined) this.c.delivery.redeliverSoon();
    return outcome;
  }

  private cmgsStart(arg: string): Outcome {
    if (this.s.cmgf === 1) return { error: { cms: 302 } };
    if (!/^\d+$/.test(arg.trim())) return { error: { cms: 304 } };
    const length = Number(arg);
    if (length < 7 || length > 164) return { error: { cms: 304 } };
    return { prompt: length };
  }
}
