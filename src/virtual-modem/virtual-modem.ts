/**
 * VirtualModem: a stateful GSM modem behind a virtual serial link, answering AT commands as 3GPP TS 27.007 / 27.005
 * describe, with the quirks of a few families (sim-profiles.ts). For tests, `--simulate`, the demo and benchmarks.
 * PDU mode only (text-mode reads answer +CMS ERROR: 302 on purpose); storage lives on the SIM and survives reboot and
 * unplug; an SMS it cannot take waits at the "SMSC". Only deliberate delays use timers, so tests can use fake timers.
 * A handler that throws is a simulator bug: logged, recorded in internalErrors(), answered ERROR.
 * This class is the wiring and the wire; its parts are line-reader, at-command, command-table, sms-storage,
 * sms-delivery, sim-card, ussd-service and noise (public types in virtual-modem-types.ts).
 */
import { silentLogger, type Logger } from '../log.js';
import { registerVirtualDevice, type DeviceSide, type VirtualDevice } from './virtual-link.js';
import { SIM_PROFILES, type SimulatedIdentity, type SimProfile, type SimState } from './sim-profiles.js';
import { readSubmitPdu } from './submit-reader.js';
import { defaultUssdScript } from './ussd-script.js';
import { UssdService } from './ussd-service.js';
import { SimCard } from './sim-card.js';
import { CommandTable, type ModemSettings } from './command-table.js';
import { NoiseSource } from './noise.js';
import { LineReader, type PduEntry } from './line-reader.js';
import { SmsStorage } from './sms-storage.js';
import { SmsDelivery } from './sms-delivery.js';
import { dispatch, finalText, OK, renderResponse, splitCommands, type Outcome } from './at-command.js';
import type {
  CnmiSettings,
  InjectResult,
  InjectSmsOptions,
  SentMessage,
  SimSnapshot,
  StoredMessage,
  VirtualModemOptions,
} from './virtual-modem-types.js';

export type { SimProfileId, SimState } from './sim-profiles.js';
export type {
  CnmiSettings,
  InjectResult,
  InjectSmsOptions,
  NoiseOptions,
  SentMessage,
  SimSnapshot,
  StoredMessage,
  VirtualModemOptions,
} from './virtual-modem-types.js';

export class VirtualModem implements VirtualDevice {
  readonly path: string;
  private readonly profile: SimProfile;
  private readonly identity: SimulatedIdentity;
  private readonly ussd: UssdService;
  private readonly log: Logger;
  private readonly opts: VirtualModemOptions;
  private readonly commands: CommandTable;
  private readonly noise: NoiseSource;

  // Device / link
  private side: DeviceSide | undefined;
  private plugged = true;
  private unregister: (() => void) | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stalled = false;
  /** Auto-baud after a silent reset: output held until a command line arrives (see reboot). */
  private heldOutput: string[] | undefined;

  // SIM (survives reboot)
  private readonly card: SimCard;
  private readonly storage: SmsStorage;
  private readonly delivery: SmsDelivery;

  // Volatile settings (reset by reboot)
  private readonly settings: ModemSettings;
  private readonly reader: LineReader;

  // Observability
  private readonly received: string[] = [];
  private readonly sent: SentMessage[] = [];
  private readonly internal: Error[] = [];
  private mr = 0;

  constructor(options: VirtualModemOptions) {
    this.opts = options;
    this.path = options.path;
    this.profile = SIM_PROFILES[options.profile ?? 'generic'];
    this.identity = { ...this.profile.identity, ...options.identity };
    const capacity = options.storageCapacity ?? 30;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 255) {
      throw new RangeError(`storageCapacity ${capacity} is not 1-255`);
    }
    const indexBase = options.indexBase ?? 1;
    this.ussd = new UssdService({
      profile: this.profile,
      script: options.ussdMenus ?? defaultUssdScript({ ownNumber: this.identity.ownNumber.replace(/^\+/, '') }),
      opts: options,
      cscs: () => this.settings.cscs,
      networkBlocked: () => this.commands.checkNeeds({ network: 'cme' }),
    });
    this.log = options.logger ?? silentLogger();
    this.card = new SimCard(options, () => this.emitBanners(this.profile.afterPinBanners));
    const quirks = new Set(options.quirks ?? []);
    // Quectel EC25 (default storage ME), Huawei sticks: SMS stored in ME whatever AT+CPMS selected.
    this.storage = new SmsStorage(
      capacity,
      indexBase,
      quirks.has('store-in-me') ? { memories: ['SM', 'ME'], receiveIn: 'ME' } : {},
    );
    this.settings = {
      echo: true,
      cmee: 0,
      cmgf: 0,
      cscs: 'IRA',
      cnmi: { mode: 0, mt: 0, bm: 0, ds: 0, bfr: 0 },
      messageService: 0,
      cregN: 0,
      fun: 1,
      curc: true,
      smsReady: false,
      smsc: this.identity.smsc,
    };
    this.noise = new NoiseSource({
      profile: this.profile,
      opts: options,
      curc: () => this.settings.curc,
      urc: (line) => this.urc(line),
    });
    this.delivery = new SmsDelivery({
      storage: this.storage,
      log: this.log,
      opts: options,
      storageFullUrc: this.profile.storageFullUrc,
      canReceive: () => this.present && this.settings.fun === 1 && this.card.ready && this.settings.smsReady,
      cnmi: () => this.settings.cnmi,
      messageService: () => this.settings.messageService,
      later: (ms, fn) => this.later(ms, fn),
      urc: (line) => this.urc(line),
      send: (text) => this.send(text),
    });
    this.reader = new LineReader({
      echo: () => this.settings.echo,
      send: (text) => this.send(text),
      line: (line) => {
        if (this.heldOutput) {
          // Auto-baud: the first command line teaches the rate; what was held goes out now.
          const held = this.heldOutput;
          this.heldOutput = undefined;
          for (const text of held) this.send(text);
        }
        this.execute(line);
      },
      pdu: (entry, send) => this.finishPduEntry(entry, send),
    });
    this.commands = new CommandTable({
      settings: this.settings,
      identity: this.identity,
      profile: this.profile,
      card: this.card,
      storage: this.storage,
      delivery: this.delivery,
      ussd: this.ussd,
      reboot: () => this.reboot(),
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /** Registers the device at its path and powers it up (boot banners). Returns the path. */
  start(): string {
    if (this.unregister) return this.path;
    this.unregister = registerVirtualDevice(this.path, this);
    this.plugged = true;
    this.boot();
    return this.path;
  }

  /** Powers off: the link (if open) sees a disconnect, the path disappears, every timer stops. */
  stop(): void {
    this.clearTimers();
    this.delivery.returnUnacknowledgedToSmsc();
    if (this.side) this.side.unplug();
    this.side = undefined;
    this.unregister?.();
    this.unregister = undefined;
  }

  get present(): boolean {
    return this.plugged && this.unregister !== undefined;
  }

  onAttach(side: DeviceSide): void {
    this.side = side;
    this.reader.clearLine();
    this.log.debug({ path: this.path }, 'virtual modem: link attached');
  }

  onDetach(): void {
    this.side = undefined;
    this.reader.reset();
    this.log.debug({ path: this.path }, 'virtual modem: link detached');
  }

  onWrite(chunk: Buffer): void {
    if (this.stalled || !this.plugged) {
      this.log.debug({ bytes: chunk.length }, 'virtual modem: input dropped (stalled or unplugged)');
      return;
    }
    this.reader.feed(chunk);
  }

  // ---------------------------------------------------------------- injection

  /** An SMS arrives from the network: built as DELIVER PDU(s), stored or routed per CNMI. */
  injectSms(opts: InjectSmsOptions): InjectResult {
    return this.delivery.injectSms(opts, {
      now: () => (this.opts.now ?? (() => new Date()))(),
      smsc: this.identity.smsc,
    });
  }

  /** Delivers a PDU as given (malformed PDUs, hand-built fixtures). */
  injectRawPdu(pdu: string, tpduLength: number, delivery: 'store' | 'direct' = 'direct'): InjectResult {
    return this.delivery.deliverAll([{ pdu: pdu.toUpperCase(), tpduLength }], delivery);
  }

  /** Sends bytes the bridge cannot make sense of (line noise, a half-baked URC). */
  injectGarbage(bytes: Buffer | string = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x1b, 0x5b, 0x0d, 0x7f, 0xc3])): void {
    this.emitRaw(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  /** Emits a URC line as the modem would (`\r\n<line>\r\n`). */
  injectUrc(line: string): void {
    this.urc(line);
  }

  /** Stops answering (input and URCs dropped) for `ms`, or until resume()/reboot(). */
  stall(ms: number | 'forever'): void {
    this.stalled = true;
    if (ms !== 'forever') this.later(ms, () => this.resume());
  }

  resume(): void {
    this.stalled = false;
  }

  /** The device vanishes (USB unplug/reset): the open link closes with disconnected=true; opening fails until replug. */
  unplug(): void {
    this.plugged = false;
    this.clearTimers();
    this.delivery.returnUnacknowledgedToSmsc();
    const side = this.side;
    this.side = undefined;
    side?.unplug();
  }

  /** The device comes back. A real stick powered off: by default it boots again (settings reset, storage kept). */
  replug(options: { reboot?: boolean } = {}): void {
    this.plugged = true;
    if (options.reboot ?? true) this.reboot();
    else this.noise.start();
  }

  /**
   * Power cycle: banners again, echo on, CMEE/CMGF/CNMI/CSCS back to defaults, SIM locked again if it has a PIN.
   * `silent`: a firmware reset that prints no banner at all (settings lost all the same; SMS ready at once); with
   * `holdUntilAt` it also holds every URC until a command line arrives (a SIM800 in auto-baud mode cannot send before
   * it has seen an `AT` to learn the rate).
   * `banners`: print these lines instead of the profile's (a modem of one family printing another family's banner);
   * its SMS service is then ready at once.
   */
  reboot(options: { silent?: boolean; holdUntilAt?: boolean; banners?: readonly string[] } = {}): void {
    this.clearTimers();
    this.delivery.returnUnacknowledgedToSmsc();
    this.card.powerCycle();
    this.boot(options.silent === true, options.banners);
    if (options.silent === true && options.holdUntilAt === true) this.heldOutput = [];
  }

  /** See SimSnapshot. An unacknowledged +CMT counts as held (the SMSC retries it). */
  snapshot(): SimSnapshot {
    const { held, concatRef } = this.delivery.snapshot();
    const { simState, pinTriesLeft } = this.card.snapshot();
    return { v: 1, slots: this.storedMessages(), held, simState, pinTriesLeft, concatRef };
  }

  /** Loads a snapshot taken by snapshot(); call before start(). Slots keep their indexes; held SMS wait at the SMSC. */
  restore(s: SimSnapshot): void {
    if (s.v !== 1) throw new RangeError(`unknown simulator state version ${String(s.v)}`);
    this.storage.restore(s.slots);
    this.delivery.restore(s);
    this.card.restore(s);
  }

  /** SMS the SMSC holds because the modem could not take them (full storage, SIM locked, not ready). */
  get heldBySmscCount(): number {
    return this.delivery.heldCount;
  }

  /** Fills every free slot with a read message from a number (storage full scenarios). */
  fillStorage(): void {
    this.storage.fill();
  }

  /** Changes what AT+CSQ / AT+CREG? report (e.g. lose the network). */
  setNetwork(state: { creg?: number; rssi?: number }): void {
    if (state.creg !== undefined) {
      this.identity.creg = state.creg;
      if (this.settings.cregN > 0) this.urc(`+CREG: ${state.creg}`);
    }
    if (state.rssi !== undefined) this.identity.csq = { ...this.identity.csq, rssi: state.rssi };
    this.delivery.flushHeld();
  }

  // ---------------------------------------------------------------- observability

  storedMessages(): StoredMessage[] {
    return this.storage.stored();
  }

  /** Every command line received (AT lines only, as typed, without CR). */
  commandLog(): string[] {
    return [...this.received];
  }

  sentMessages(): SentMessage[] {
    return [...this.sent];
  }

  cnmi(): CnmiSettings {
    return { ...this.settings.cnmi };
  }

  get droppedForFullStorage(): number {
    return this.delivery.droppedForFullStorage;
  }

  get echoEnabled(): boolean {
    return this.settings.echo;
  }

  get sim(): SimState {
    return this.card.state;
  }

  /** Handler failures (simulator bugs); tests assert this stays empty. */
  internalErrors(): Error[] {
    return [...this.internal];
  }

  private remember<T>(list: T[], item: T): void {
    list.push(item);
    const limit = this.opts.historyLimit ?? 10_000;
    if (list.length > limit) list.splice(0, list.length - limit);
  }

  // ---------------------------------------------------------------- boot and output

  private boot(silent = false, banners?: readonly string[]): void {
    this.heldOutput = undefined;
    this.settings.echo = true;
    this.settings.cmee = 0;
    this.settings.cmgf = 0;
    this.settings.cscs = 'IRA';
    this.settings.cnmi = { mode: 0, mt: 0, bm: 0, ds: 0, bfr: 0 };
    this.settings.messageService = 0;
    this.settings.cregN = 0;
    this.ussd.reset();
    this.storage.resetSelection();
    this.settings.fun = 1;
    this.settings.curc = true;
    this.stalled = false;
    this.reader.reset();
    this.settings.smsc = this.identity.smsc;
    this.settings.smsReady = silent || banners !== undefined || this.profile.smsReadyBanner === undefined;
    this.emitBanners(silent ? [] : (banners ?? this.profile.bootBanners(this.card.state)));
    this.noise.start();
  }

  /** Emits banners `bootStepMs` apart; the SMS-ready banner (if the profile has one) opens the SMS commands. */
  private emitBanners(banners: readonly string[]): void {
    const step = this.opts.bootStepMs ?? 5;
    const emitOne = (line: string): void => {
      this.urc(line);
      if (line === this.profile.smsReadyBanner) {
        this.settings.smsReady = true;
        this.delivery.flushHeld();
      }
    };
    banners.forEach((line, i) => {
      if (step === 0) emitOne(line);
      else this.later(step * (i + 1), () => emitOne(line));
    });
    if (banners.length === 0 || step === 0) this.delivery.flushHeld();
    else this.later(step * (banners.length + 1), () => this.delivery.flushHeld());
  }

  private later(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.noise.stop();
    this.delivery.clearCmtTimer();
  }

  private emitRaw(data: Buffer): void {
    if (this.stalled || !this.side) return;
    const latency = this.opts.latencyMs ?? 0;
    if (latency > 0) this.later(latency, () => this.side?.emit(data));
    else this.side.emit(data);
  }

  private send(text: string): void {
    this.emitRaw(Buffer.from(text, 'latin1'));
  }

  private urc(line: string): void {
    if (this.heldOutput) {
      this.heldOutput.push(`\r\n${line}\r\n`);
      return;
    }
    this.send(`\r\n${line}\r\n`);
  }

  private respond(outcome: Outcome): void {
    const quirks = this.opts.quirks ?? [];
    // 'unlisted-error': a result code no table lists, for commands the modem does not know.
    const unknownCommand = quirks.includes('unlisted-error') ? 'COMMAND REJECTED' : this.profile.unknownCommand;
    const final = finalText(outcome.error, this.settings.cmee, unknownCommand);
    if (outcome.noFinal && outcome.error === undefined) {
      // 'cpin-no-ok' (Wavecom, Sierra): the answer and no final result after it.
      this.send(`\r\n${(outcome.lines ?? []).join('\r\n')}\r\n`);
      outcome.then?.();
      return;
    }
    this.send(renderResponse(outcome, final, () => this.noise.midResponse()));
    outcome.then?.();
  }

  // ---------------------------------------------------------------- command execution

  private execute(rawLine: string): void {
    const line = rawLine.trim();
    if (!/^AT/i.test(line)) {
      if (line !== '') this.log.debug({ line }, 'virtual modem: ignored a line that does not start with AT');
      return;
    }
    this.remember(this.received, line);
    const collected: string[] = [];
    const commands = splitCommands(line.slice(2));
    for (let i = 0; i < commands.length; i++) {
      const outcome = this.applyQuirks(commands[i] ?? '', this.dispatch(commands[i] ?? ''));
      collected.push(...(outcome.lines ?? []));
      if (outcome.prompt !== undefined) {
        // Only a last command may prompt; the prompt replaces the final result until the PDU arrives.
        if (i !== commands.length - 1) return this.respond({ error: 'ERROR' });
        this.reader.expectPdu(outcome.prompt);
        this.send('\r\n> ');
        return;
      }
      if (outcome.error !== undefined || i === commands.length - 1) {
        this.respond({ ...outcome, lines: collected });
        return;
      }
      // Intermediate commands' URCs and follow-ups still happen.
      for (const u of [...(outcome.beforeFinal ?? []), ...(outcome.afterFinal ?? [])]) collected.push(u);
      outcome.then?.();
    }
  }

  /** The opt-in behaviours of real devices (VirtualModemOptions.quirks) that change an answer. */
  private applyQuirks(command: string, outcome: Outcome): Outcome {
    const quirks = this.opts.quirks ?? [];
    if (quirks.length === 0) return outcome;
    if (quirks.includes('cpin-no-ok') && /^\+CPIN\?$/i.test(command) && outcome.error === undefined)
      return { ...outcome, noFinal: true };
    const releaseFirst = quirks.includes('ussd-release-first');
    if (
      (releaseFirst || quirks.includes('ussd-release-only')) &&
      /^\+CUSD=1,/i.test(command) &&
      outcome.error === undefined
    ) {
      // OK first, then the release notice, then (or never) the reply as status 0 (python-gsmmodem test_modem.py).
      const reply = [...(outcome.beforeFinal ?? []), ...(outcome.afterFinal ?? [])].find((u) => u.startsWith('+CUSD:'));
      const notice = '+CUSD: 2,"Initiating Release",15';
      const real = reply?.replace(/^\+CUSD:\s*\d/, '+CUSD: 0');
      return { ...outcome, beforeFinal: [], afterFinal: releaseFirst && real ? [notice, real] : [notice] };
    }
    return outcome;
  }

  private dispatch(command: string): Outcome {
    return dispatch(
      this.commands.entries,
      command,
      (needs) => this.commands.checkNeeds(needs),
      (error) => {
        this.internal.push(error);
        this.log.error({ err: error, command }, 'virtual modem: handler failed (simulator bug); answering ERROR');
      },
    );
  }

  private finishPduEntry(entry: PduEntry, send: boolean): void {
    if (!send) return this.respond(OK); // ESC: quit without sending
    const read = readSubmitPdu(entry.hex, entry.length);
    if (!read.ok) {
      this.log.debug({ reason: read.reason }, 'virtual modem: AT+CMGS PDU rejected');
      return this.respond({ error: { cms: 304 } });
    }
    this.mr = (this.mr + 1) % 256;
    const sent: SentMessage = {
      mr: this.mr,
      pdu: entry.hex.toUpperCase(),
      tpduLength: entry.length,
      destination: read.submit.destination,
      text: read.submit.text,
    };
    this.remember(this.sent, sent);
    this.respond({ lines: [`+CMGS: ${this.mr}`] });
    this.opts.onSmsSubmitted?.(sent);
  }
}
