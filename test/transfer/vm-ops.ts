/**
 * Test helper: virtual modems on one VirtualNetwork, each reached through a ModemOps built here over the production
 * Modem (factory: virtual link -> AT channel -> Modem, init run): the CLI's direct path, DirectOps. SMS are read from the
 * SIM (smsList) and never deleted, so a runner on this path polls, as it would without a daemon.
 */
import { silentLogger } from '../../src/log.js';
import type { ModemOps } from '../../src/ops/modem-ops.js';
import { DirectOps } from '../../src/ops/direct-ops.js';
import { createModem, openChannel } from '../../src/modem/factory.js';
import type { Modem } from '../../src/modem/modem.js';
import type { OperatorKey } from '../../src/balance/operators.js';
import { VirtualNetwork, type LineOptions, type NetworkOptions } from '../../src/virtual-modem/operator-network.js';
import { VirtualModem } from '../../src/virtual-modem/virtual-modem.js';

let counter = 0;

export interface TestLine {
  name: string;
  vm: VirtualModem;
  ops: ModemOps;
  modem: Modem;
}

export class TestNetwork {
  readonly network: VirtualNetwork;
  private readonly lines: TestLine[] = [];
  private readonly closers: Array<() => Promise<void>> = [];

  /** A network of its own, or lines joined to an existing one (a daemon's). */
  constructor(o: NetworkOptions = {}, network?: VirtualNetwork) {
    this.network = network ?? new VirtualNetwork({ deliveryDelayMs: 5, ...o });
    this.ownNetwork = network === undefined;
  }

  private readonly ownNetwork: boolean;

  async add(
    name: string,
    line: LineOptions & { operator: OperatorKey },
    profile: 'generic' | 'simcom' | 'huawei' = 'simcom',
  ): Promise<TestLine> {
    const joined = this.network.join(line);
    const path = `virtual:transfer-test-${process.pid}-${++counter}-${name}`;
    const vm = new VirtualModem({
      path,
      profile,
      bootStepMs: 0,
      noise: false,
      ussdMenus: joined.ussdMenus,
      onSmsSubmitted: joined.onSmsSubmitted,
      identity: { ownNumber: joined.ownNumber },
    });
    joined.connect(vm);
    vm.start();
    const channel = await openChannel({ path, baudRate: 115200 }, { logger: silentLogger(), name });
    const modem = createModem(channel, { name, logger: silentLogger(), profile: 'auto' });
    await modem.init();
    const ops = new DirectOps({ modem, channel, close: async () => undefined }, name);
    this.closers.push(async () => {
      modem.detach();
      await channel.close();
      vm.stop();
    });
    const l = { name, vm, ops, modem };
    this.lines.push(l);
    return l;
  }

  async close(): Promise<void> {
    if (this.ownNetwork) this.network.close();
    for (const c of this.closers.splice(0)) await c();
  }
}
