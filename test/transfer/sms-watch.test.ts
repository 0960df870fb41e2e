/**
 * The daemon path of a test transfer: the centre's `sms` event (spool id) and `delivery` events (the webhook's
 * answer, a retry first) as the control socket sends them, driven by hand; tolerant payload reading.
 */
import { describe, expect, it } from 'vitest';
import type { ModemOps } from '../../src/ops/modem-ops.js';
import type { EventMessage } from '../../src/control/protocol.js';
import { runTransfer } from '../../src/transfer/runner.js';
import { deliveryFromEvent, smsFromEvent } from '../../src/transfer/sms-watch.js';

function daemonOps(name: string, over: Partial<ModemOps> = {}): ModemOps & { emit(e: Omit<EventMessage, 'v'>): void } {
  const listeners = new Set<(e: EventMessage) => void>();
  const nope = () => Promise.reject(new Error('not used'));
  return {
    name,
    path: 'daemon',
    info: nope,
    at: nope,
    ussdOpen: nope,
    ussdReply: nope,
    ussdCancel: async () => undefined,
    smsList: nope,
    smsRead: nope,
    smsDelete: nope,
    smsSend: nope,
    onEvent: async (l) => (listeners.add(l), () => listeners.delete(l)),
    close: async () => undefined,
    emit: (e) => {
      for (const l of listeners) l({ v: 1, ...e });
    },
    ...over,
  };
}

describe('reading control events', () => {
  it('takes sender, text and spool id from an sms event, and the state and outcome from a delivery event', () => {
    expect(
      smsFromEvent(
        { v: 1, event: 'sms', modem: 'c', data: { id: 'r1', modem: 'c', sender: '858', text: 'hi', receivedAt: 'x' } },
        5,
      ),
    ).toEqual({ sender: '858', text: 'hi', spoolId: 'r1', at: 5 });
    expect(smsFromEvent({ v: 1, event: 'urc', data: { sender: '858', text: 'x' } }, 0)).toBeUndefined();
    expect(smsFromEvent({ v: 1, event: 'sms', data: { sender: '858' } }, 0)).toBeUndefined();
    expect(
      deliveryFromEvent({ v: 1, event: 'delivery', data: { id: 'r1', status: 'delivered', outcome: 'HTTP 200' } }),
    ).toEqual({ spoolId: 'r1', state: 'delivered', outcome: 'HTTP 200' });
    expect(deliveryFromEvent({ v: 1, event: 'delivery', data: { id: 'r1', status: 200, body: '{"ok":1}' } })).toEqual({
      spoolId: 'r1',
      status: 200,
      body: '{"ok":1}',
    });
  });
});

describe('runTransfer through the daemon', () => {
  it('shows the confirmation with its spool id and the final webhook answer (after a retry)', async () => {
    const centre = daemonOps('centre');
    const from = daemonOps('sender', {
      ussdOpen: async () => ({ status: 1, statusText: 'USSD needs further input', text: 'Kirim? 1.Ya', raw: '' }),
      ussdReply: async () => {
        setTimeout(() => {
          centre.emit({
            event: 'sms',
            modem: 'centre',
            data: {
              id: 'other',
              sender: '858',
              text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281299999999',
            },
          });
          centre.emit({
            event: 'sms',
            modem: 'centre',
            data: {
              id: 'rec-7',
              sender: '858',
              text: 'Anda mendapatkan penambahan pulsa Rp 10000 dari nomor 6281211110001. SN: X1',
            },
          });
          centre.emit({
            event: 'delivery',
            data: { id: 'rec-7', status: 'retry', outcome: 'HTTP 503; next attempt at ...' },
          });
          setTimeout(
            () => centre.emit({ event: 'delivery', data: { id: 'rec-7', status: 'delivered', outcome: 'HTTP 200' } }),
            20,
          );
        }, 10);
        return { status: 0, statusText: 'USSD done', text: 'Transfer berhasil', raw: '' };
      },
    });
    const report = await runTransfer({
      from,
      centre,
      fromNumber: '081211110001',
      steps: [{ kind: 'ussd', code: '*858*081200000001*10000#', replies: ['1'] }],
      amount: 10_000,
      confirmTimeoutMs: 5000,
      pollMs: 1000,
    });
    expect(report.outcome).toBe('confirmed');
    expect(report.confirmation).toEqual({
      sender: '858',
      text: 'Anda mendapatkan penambahan pulsa Rp 10000 dari nomor 6281211110001. SN: X1',
      spoolId: 'rec-7',
      webhook: { spoolId: 'rec-7', state: 'delivered', outcome: 'HTTP 200' },
    });
  });

  it('the daemon going away mid-step: the report says the step may have been sent', async () => {
    const from = daemonOps('sender', {
      ussdOpen: async () => ({ status: 1, statusText: 'USSD needs further input', text: 'Kirim? 1.Ya', raw: '' }),
      ussdReply: () => Promise.reject(new Error('the daemon closed the control connection')),
    });
    const report = await runTransfer({
      from,
      steps: [{ kind: 'ussd', code: '*858*081200000001*10000#', replies: ['1'] }],
      amount: 10_000,
      confirmTimeoutMs: 1000,
    });
    expect(report.outcome).toBe('failed');
    expect(report.steps[0]).toMatchObject({
      status: 'failed',
      sent: 'unknown',
      error: 'the daemon closed the control connection',
    });
    expect(report.sent).toEqual([
      'USSD *858*081200000001*10000# on sender',
      'USSD step 1 on sender (MAY have been sent: the outcome is unknown)',
    ]);
  });
});
