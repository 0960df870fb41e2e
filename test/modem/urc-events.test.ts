/**
 * URC -> modem events, with an injected clock: the duplicate window of devices that report each SMS twice, reboot
 * only after init, storage full, and URCs that yield nothing (logged instead).
 */
import { describe, expect, it } from 'vitest';
import type { Urc } from '../../src/at/types.js';
import { silentLogger } from '../../src/log.js';
import { generic, getProfile } from '../../src/modem/profiles/index.js';
import { UrcEvents } from '../../src/modem/urc-events.js';

const cmti = (index: number, storage = 'SM'): Urc => ({
  name: 'cmti',
  lines: [`+CMTI: "${storage}",${index}`],
  data: { storage, index },
});

function mapper(windowMs = 5000) {
  let now = 1_000_000;
  const events = new UrcEvents({ log: silentLogger(), duplicateWindowMs: windowMs, now: () => now });
  return { events, advance: (ms: number) => (now += ms) };
}

describe('UrcEvents', () => {
  it('a repeated +CMTI within the window is one SMS on a device that reports twice; after the window it is new', () => {
    const { events, advance } = mapper();
    const ctx = { profile: getProfile('neoway'), initDone: true, storage: 'SM' };
    expect(events.map(cmti(3), ctx)).toEqual([{ name: 'sms', info: { storage: 'SM', index: 3 } }]);
    advance(4999);
    expect(events.map(cmti(3), ctx)).toEqual([]);
    advance(5001);
    expect(events.map(cmti(3), ctx)).toEqual([{ name: 'sms', info: { storage: 'SM', index: 3 } }]);
  });

  it('forget(index) after a delete: the slot reused at once is a new SMS', () => {
    const { events } = mapper();
    const ctx = { profile: getProfile('neoway'), initDone: true, storage: 'SM' };
    expect(events.map(cmti(1), ctx)).toHaveLength(1);
    events.forget(1);
    expect(events.map(cmti(1), ctx)).toHaveLength(1);
  });

  it('profiles without duplicate indications pass every +CMTI through; a missing memory means the chosen storage', () => {
    const { events } = mapper();
    const ctx = { profile: generic, initDone: true, storage: 'ME' };
    expect(events.map(cmti(2), ctx)).toHaveLength(1);
    expect(events.map({ name: 'cmti', lines: ['+CMTI: 2'], data: { index: 2 } }, ctx)).toEqual([
      { name: 'sms', info: { storage: 'ME', index: 2 } },
    ]);
  });

  it('a boot banner is a reboot only after init; storage-full follows the profile', () => {
    const { events } = mapper();
    const rdy: Urc = { name: 'rdy', lines: ['RDY'], data: {} };
    expect(events.map(rdy, { profile: getProfile('simcom'), initDone: false, storage: 'SM' })).toEqual([]);
    expect(events.map(rdy, { profile: getProfile('simcom'), initDone: true, storage: 'SM' })).toEqual([
      { name: 'reboot', info: { urc: 'rdy' } },
    ]);
    const full: Urc = { name: 'smmemfull', lines: ['^SMMEMFULL: "SM"'], data: { storage: 'SM' } };
    expect(events.map(full, { profile: getProfile('huawei'), initDone: true, storage: 'SM' })).toEqual([
      { name: 'storage-full', info: { urc: 'smmemfull', storage: 'SM' } },
    ]);
    expect(events.map(full, { profile: generic, initDone: true, storage: 'SM' })).toEqual([]);
  });

  it('direct deliveries and status reports; unreadable ones yield nothing', () => {
    const { events } = mapper();
    const ctx = { profile: generic, initDone: true, storage: 'SM' };
    expect(
      events.map({ name: 'cmt', lines: ['+CMT: ,20', '07916226'], data: { pdu: '07916226ab', length: 20 } }, ctx),
    ).toEqual([{ name: 'sms-direct', info: { pdu: '07916226AB', length: 20 } }]);
    expect(events.map({ name: 'cmt', lines: ['+CMT: ,20', 'zz'], data: { pdu: 'zz', length: 20 } }, ctx)).toEqual([]);
    expect(events.map({ name: 'cdsi', lines: ['+CDSI: "SR",4'], data: { storage: 'SR', index: 4 } }, ctx)).toEqual([
      { name: 'status-report', info: { storage: 'SR', index: 4 } },
    ]);
    expect(events.map({ name: 'cmti', lines: ['+CMTI: "SM",x'], data: { storage: 'SM' } }, ctx)).toEqual([]);
  });
});
