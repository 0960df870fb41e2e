/**
 * The fault trials: each names one fault, drives it against the real daemon and simulator
 * processes (runner.ts), and is judged by the same rules: every accepted SMS reached the receiver byte-exact, every
 * repeated POST carried the same Idempotency-Key and body, nothing is left on the SIM. Moments are drawn from the
 * run's seeded PRNG, so a printed seed replays the same trial.
 */
import { sleep } from '../support/until.js';
import { until } from '../support/until.js';
import type { RunEnv, TrialDef } from './runner.js';
import { between } from './workload.js';

const BURST = 100;

/** Keeps SIGKILLing and restarting the daemon at random moments while `work` runs (1 to 3 kills). */
async function killAtRandom(env: RunEnv, work: Promise<void>): Promise<void> {
  const kills = between(env.rng, 1, 3);
  const chaos = (async () => {
    for (let k = 0; k < kills; k++) {
      const after = between(env.rng, 50, 2500);
      await sleep(after);
      await env.killDaemon();
      const down = between(env.rng, 0, 500);
      await sleep(down);
      env.notes.push(`SIGKILL after ${after} ms, restart after ${down} ms`);
      await env.startDaemon();
    }
  })();
  await Promise.all([work, chaos]);
}

export const TRIALS: TrialDef[] = [
  {
    name: 'SIGKILL during a 100-SMS burst',
    runs: { full: 20, ci: 3 },
    sms: BURST,
    drive: (env, sms) => killAtRandom(env, env.burst(sms)),
  },
  {
    name: 'receiver answers 500 for a while',
    runs: { full: 3, ci: 1 },
    sms: BURST,
    drive: async (env, sms) => {
      env.receiver.mode = { kind: 'status', status: 500 };
      await env.burst(sms);
      await sleep(3000);
      env.receiver.mode = { kind: 'ok' };
    },
  },
  {
    name: 'receiver down (listener closed)',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const at = between(env.rng, 0, 40);
      await env.burst(sms, { [at]: () => env.receiver.down() });
      await sleep(3000);
      await env.receiver.up();
    },
  },
  {
    name: 'receiver answers 429 Retry-After: 1',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      env.receiver.mode = { kind: 'retry-after', seconds: 1 };
      await env.burst(sms);
      await sleep(3000);
      env.receiver.mode = { kind: 'ok' };
    },
    // Retry-After is a lower bound the daemon promises to honour: the next POST of the same record comes no earlier.
    check: async (env) => {
      const problems: string[] = [];
      const posts = env.receiver.posts;
      for (let i = 0; i < posts.length; i++) {
        if (!posts[i]!.answer.startsWith('429')) continue;
        const next = posts.slice(i + 1).find((p) => p.key === posts[i]!.key);
        if (next && next.at - posts[i]!.at < 950)
          problems.push(
            `Retry-After: 1 not honoured: the same key came back after ${Math.round(next.at - posts[i]!.at)} ms`,
          );
      }
      return problems.slice(0, 3);
    },
  },
  {
    name: 'receiver hangs (no answer)',
    runs: { full: 2, ci: 0 },
    sms: 30,
    drive: async (env, sms) => {
      env.receiver.mode = { kind: 'hang' };
      await env.burst(sms);
      await sleep(4000); // longer than webhook.timeoutMs (3 s)
      env.receiver.mode = { kind: 'ok' };
      env.receiver.releaseHanging();
    },
  },
  {
    name: 'modem unplugged and replugged mid-burst',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const first = between(env.rng, 10, 45);
      const second = between(env.rng, 55, 90);
      const unplug = (at: number) => async () => {
        const down = between(env.rng, 300, 2000);
        env.notes.push(`unplugged before SMS ${at} for ${down} ms`);
        await env.unplugFor(down);
      };
      await env.burst(sms, { [first]: unplug(first), [second]: unplug(second) });
    },
  },
  {
    name: 'stalled modem (5 s silent)',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const at = between(env.rng, 10, 70);
      await env.burst(sms, { [at]: async () => void (await env.sim.ask('stall 5000', 'modem silent')) });
    },
  },
  {
    name: 'garbage on the line',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const hooks: Record<number, () => Promise<void>> = {};
      for (let k = 0; k < 6; k++) {
        hooks[between(env.rng, 0, sms.length - 1)] = async () => {
          for (let n = between(env.rng, 1, 3); n > 0; n--) await env.sim.ask('garbage', 'noise sent');
        };
      }
      await env.burst(sms, hooks);
    },
  },
  {
    name: 'modem reboot with banners',
    runs: { full: 3, ci: 1 },
    sms: BURST,
    drive: async (env, sms) => {
      const at = between(env.rng, 20, 80);
      await env.burst(sms, { [at]: async () => void (await env.sim.ask('reboot', 'modem rebooting')) });
    },
  },
  {
    name: 'modem reboot without banner (silent)',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const at = between(env.rng, 20, 80);
      await env.burst(sms, { [at]: async () => void (await env.sim.ask('reboot silent', 'modem rebooting')) });
    },
  },
  {
    name: 'full SIM storage',
    runs: { full: 3, ci: 0 },
    sms: BURST,
    drive: async (env, sms) => {
      const at = between(env.rng, 0, 50);
      await env.burst(sms, { [at]: async () => void (await env.sim.ask('full', 'SIM storage filled')) });
    },
  },
  {
    name: 'wrong PIN (SIM must not lock)',
    runs: { full: 1, ci: 0 },
    sms: 0,
    simArgs: ['--pin', '1234'],
    modem: { pin: '0000' },
    drive: async (env) => {
      await until(async () => (await env.sim.state()).pinEntries >= 1, 'the daemon to try its PIN', 30_000, {
        everyMs: 20,
      });
      // Longer than the supervisor's SIM retry (60 s): a second attempt would show here.
      const watchUntil = performance.now() + 75_000;
      while (performance.now() < watchUntil) {
        const st = await env.sim.state();
        if (st.pinEntries >= 2) break;
        await sleep(2500);
      }
    },
    check: async (env) => {
      const st = await env.sim.state();
      env.notes.push(`PIN entries seen by the SIM: ${st.pinEntries}; SIM state: ${st.sim}`);
      const problems: string[] = [];
      if (st.pinEntries > 1) problems.push(`the daemon sent the rejected PIN ${st.pinEntries} times (3 lock the SIM)`);
      if (st.sim === 'puk') problems.push('the SIM is PUK-locked');
      return problems;
    },
  },
];
