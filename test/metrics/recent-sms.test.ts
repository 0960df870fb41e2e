/** The page's list of the last SMS: bounded, newest first, following delivery events; last SMS per modem. */
import { describe, expect, it } from 'vitest';
import { RecentSmsList } from '../../src/metrics/recent-sms.js';

const sms = (id: string, modem = 'm1', receivedAt = `2026-01-01T00:00:0${id}Z`) => ({
  v: 1,
  event: 'sms',
  modem,
  data: { id, modem, sender: '858', text: `t${id}`, receivedAt },
});

describe('RecentSmsList', () => {
  it('keeps the last N, newest first, and follows their deliveries', () => {
    const r = new RecentSmsList(3);
    for (const id of ['1', '2', '3', '4']) r.onEvent(sms(id));
    r.onEvent({ event: 'delivery', data: { id: '3', status: 'retry', outcome: 'HTTP 503' } });
    r.onEvent({ event: 'delivery', data: { id: '3', status: 'delivered', outcome: 'HTTP 200' } });
    r.onEvent({ event: 'delivery', data: { id: '1', status: 'delivered' } }); // dropped already: ignored
    r.onEvent({ event: 'urc', data: { id: '4' } });
    expect(r.list().map((x) => [x.id, x.state, x.attempts, x.outcome])).toEqual([
      ['4', 'pending', 0, undefined],
      ['3', 'delivered', 2, 'HTTP 200'],
      ['2', 'pending', 0, undefined],
    ]);
  });

  it("seeds from pending records and remembers each modem's last SMS even beyond the limit; limit 0 keeps none", () => {
    const r = new RecentSmsList(0);
    r.seed([
      {
        id: 'a',
        sim: { modem: 'm2' },
        sender: '858',
        text: 'x',
        receivedAt: '2026-01-01T00:00:05Z',
        attempts: 2,
        lastError: 'HTTP 500',
      },
    ]);
    r.onEvent(sms('1', 'm1'));
    expect(r.list()).toEqual([]);
    expect(r.lastReceivedAt('m2')).toBe('2026-01-01T00:00:05Z');
    expect(r.lastReceivedAt('m1')).toBe('2026-01-01T00:00:01Z');
    const s = new RecentSmsList(5);
    s.seed([
      {
        id: 'a',
        sim: { modem: 'm2' },
        sender: '858',
        text: 'x',
        receivedAt: '2026-01-01T00:00:05Z',
        attempts: 2,
        lastError: 'HTTP 500',
      },
    ]);
    s.onEvent({ event: 'sms', data: { id: 'a' } }); // the same record again: kept once
    expect(s.list()).toEqual([
      {
        id: 'a',
        modem: 'm2',
        sender: '858',
        text: 'x',
        receivedAt: '2026-01-01T00:00:05Z',
        state: 'retry',
        attempts: 2,
        outcome: 'HTTP 500',
      },
    ]);
  });
});
