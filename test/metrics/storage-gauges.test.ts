import { describe, expect, it } from 'vitest';
import { BridgeMetrics } from '../../src/metrics/registry.js';

describe('SMS storage metrics', () => {
  it('each memory of each modem has its used and capacity gauge, from the receiver status', async () => {
    const m = new BridgeMetrics(
      {
        version: '0.0.0',
        snapshot: async () => ({
          modems: [
            {
              name: 'qtl-1',
              state: 'running',
              reconnects: 0,
              receiver: {
                storages: [
                  { storage: 'SM', used: 2, total: 30 },
                  { storage: 'ME', used: 7, total: 255 },
                ],
              },
            },
          ],
          forwarder: { delivered: 0, retried: 0, dead: 0 },
          spool: { pending: 0, sent: 0, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
          health: { healthy: true },
        }),
      },
      { defaultMetrics: false },
    );
    const text = await m.registry.metrics();
    expect(text).toContain('pulsa_bridge_sms_storage_used{modem="qtl-1",storage="ME"} 7');
    expect(text).toContain('pulsa_bridge_sms_storage_used{modem="qtl-1",storage="SM"} 2');
    expect(text).toContain('pulsa_bridge_sms_storage_capacity{modem="qtl-1",storage="ME"} 255');
  });
});
