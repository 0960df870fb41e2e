/**
 * `balance` deciding per modem, as operations meet it: the compiled daemon runs two virtual SIMs (one with a balance
 * check, one without), the operator's config names a third the daemon does not run. The daemon's own settings decide
 * for its modems (its `hello` says which have a check), the whole config for the other, and every refusal comes
 * before anything is dialled. The operator's shell lacks a secret only the daemon's environment has.
 */
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { DaemonProcess, killAll, runCli } from '../support/daemon.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('balance-paths'));
});

afterEach(async () => {
  await killAll();
  await cleanup();
});

it('through the daemon for its modems (its settings), on the port for the others; refusals before any dial', async () => {
  const socket = path.join(dir, 'control.sock');
  const daemonModems = [
    {
      name: 'tsel',
      port: 'virtual:tsel?number=081211110001&operator=telkomsel&balance=24025&activeUntil=2031-01-31',
      senders: ['858'],
      operator: 'telkomsel',
    },
    // no operator and no balance section: no balance check
    { name: 'plain', port: 'virtual:plain?number=081211110002&operator=telkomsel', senders: ['858'] },
  ];
  const daemonFile = await writeConfig(dir, {
    webhook: { url: 'http://127.0.0.1:9/hook', hmacSecret: 'env:PB_TEST_BALANCE_PATHS_SECRET' },
    control: { socket },
    modems: daemonModems,
  });
  const daemon = await DaemonProcess.start(
    daemonFile,
    ['modem tsel ready:', 'modem plain ready:', 'control socket listening'],
    60_000,
    { PB_TEST_BALANCE_PATHS_SECRET: 'the daemon has it' },
  );
  // The operator's config: the same socket, one more modem the daemon does not run (an Indosat SIM: *555#).
  const cliFile = await writeConfig(
    dir,
    {
      webhook: { url: 'http://127.0.0.1:9/hook', hmacSecret: 'env:PB_TEST_BALANCE_PATHS_SECRET' },
      control: { socket },
      modems: [
        ...daemonModems,
        {
          name: 'isat',
          port: 'virtual:isat?number=085611110001&operator=indosat&balance=125000&activeUntil=2031-02-28',
          senders: ['363'],
          operator: 'indosat',
        },
      ],
    },
    { file: 'operator.json' },
  );
  const balanceLines = () => daemon.out.filter((l) => /balance check on|USSD .* on plain/.test(l));

  // An unknown name: refused before the daemon is even asked (no connection of the CLI's in its log).
  const connections = () => daemon.out.filter((l) => /control client connected/.test(l)).length;
  const before = connections();
  const unknown = await runCli(['balance', '-c', cliFile, '--modem', 'nope']);
  expect(unknown.code).toBe(2);
  expect(unknown.err).toMatch(/^error: no modem named "nope" in the config/);
  expect(connections()).toBe(before);

  // A modem without a check, named: refused before anything is dialled (by the daemon or on a port).
  const none = await runCli(['balance', '-c', cliFile, '--modem', 'tsel', '--modem', 'plain']);
  expect(none.code, none.err).toBe(2);
  expect(none.err).toMatch(/^error: modem plain has no balance check/);
  expect(balanceLines()).toEqual([]);

  // The shell lacks the secret: the daemon's modems need none of it; the port's modem needs the whole config.
  const mixed = await runCli(['balance', '-c', cliFile, '--modem', 'tsel', '--json']);
  expect(mixed.code, mixed.err).toBe(0);
  expect(JSON.parse(mixed.out)).toMatchObject({ modem: 'tsel', code: '*888#', balance: 24025, state: 'ok' });
  const needsWhole = await runCli(['balance', '-c', cliFile, '--json']);
  expect(needsWhole.code).toBe(1);
  expect(needsWhole.err).toMatch(/environment variable PB_TEST_BALANCE_PATHS_SECRET is not set/);

  // Every modem with a check: tsel through the daemon, plain skipped, isat on its (virtual) port.
  const all = await runCli(['balance', '-c', cliFile, '--json'], {
    env: { PB_TEST_BALANCE_PATHS_SECRET: 'the operator has it too' },
  });
  expect(all.code, all.err).toBe(0);
  expect((JSON.parse(all.out) as Array<Record<string, unknown>>).map((r) => [r.modem, r.code, r.balance])).toEqual([
    ['tsel', '*888#', 24025],
    ['isat', '*555#', 125_000],
  ]);
  expect(balanceLines().filter((l) => /balance check on tsel/.test(l))).toHaveLength(2);
  expect(balanceLines().filter((l) => /plain/.test(l))).toEqual([]);

  // A code given makes any modem checkable, through the daemon.
  const coded = await runCli(['balance', '-c', cliFile, '--modem', 'plain', '--code', '*888#', '--json']);
  expect(coded.code, coded.err).toBe(0);
  expect(JSON.parse(coded.out)).toMatchObject({ modem: 'plain', code: '*888#' });
  expect(balanceLines().filter((l) => /plain/.test(l))).toHaveLength(1);
}, 120_000);
