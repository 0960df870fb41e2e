/** Records in the config (webhook.headers, reseller.flows) check and keep every key, also constructor and prototype (found in review: valibot record() skips them). */
import { expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';

const base = (extra: object) => ({
  webhook: { baseUrl: 'https://x.example/api/v1/convert-pulsa', ...extra },
  modems: [{ name: 'a', port: '/dev/ttyUSB0', senders: ['858'] }],
});

it.each(['constructor', 'prototype'])('webhook.headers.%s is validated and kept, not silently dropped', (key) => {
  expect(() => parseConfig(JSON.parse(JSON.stringify(base({ headers: { [key]: 'env:UNSET' } }))), {})).toThrow(
    /environment variable UNSET is not set/,
  );
  const cfg = parseConfig(JSON.parse(JSON.stringify(base({ headers: { [key]: 'v' } }))), {});
  expect(Object.keys(cfg.webhook.headers)).toEqual([key]);
});

it('reseller.flows.constructor is validated like any other operator key', () => {
  const raw = { ...base({}), reseller: { flows: { constructor: { steps: 'not an array' } } } };
  expect(() => parseConfig(JSON.parse(JSON.stringify(raw)), {})).toThrow(/reseller\.flows\.constructor/);
});

it('a __proto__ key in webhook.headers is reported (not a header name), never set as a prototype', () => {
  const raw = JSON.parse(
    '{"webhook":{"baseUrl":"https://x.example/api/v1/convert-pulsa","headers":{"__proto__":{"polluted":true}}},"modems":[{"name":"a","port":"/dev/ttyUSB0","senders":["858"]}]}',
  );
  expect(() => parseConfig(raw, {})).toThrow(/webhook\.headers\.__proto__: a key named __proto__ is not allowed/);
});

it('ordinary header and flow keys still parse as before', () => {
  const cfg = parseConfig(
    JSON.parse(JSON.stringify(base({ headers: { 'X-Tenant': 'v1', Authorization: 'Bearer t' } }))),
    {},
  );
  expect(cfg.webhook.headers).toEqual({ 'X-Tenant': 'v1', Authorization: 'Bearer t' });
  expect(() =>
    parseConfig(JSON.parse(JSON.stringify({ ...base({}), reseller: { flows: { Tsel: { steps: [] } } } })), {}),
  ).toThrow(/reseller\.flows\.Tsel: expected a lower-case operator key/);
});

it('a __proto__ key in reseller.flows (which the operator-key pattern allows) is reported, never kept', () => {
  const raw = JSON.parse(
    '{"webhook":{"baseUrl":"https://x.example/api/v1/convert-pulsa"},"modems":[{"name":"a","port":"/dev/ttyUSB0","senders":["858"]}],"reseller":{"flows":{"__proto__":{"steps":[{"kind":"ussd","code":"*858*{to}*{amount}#"}]}}}}',
  );
  expect(() => parseConfig(raw, {})).toThrow(/reseller\.flows\.__proto__: a key named __proto__ is not allowed/);
});
