/** parseRunArgs (src/cli/run-entry.ts): the options `run` documents, read without commander; anything else goes to commander. */
import { describe, expect, it } from 'vitest';
import { parseRunArgs } from '../../src/cli/run-entry.js';

describe('parseRunArgs', () => {
  it('reads every form of --config and --simulate', () => {
    expect(parseRunArgs([], '/etc/x.json')).toEqual({ config: '/etc/x.json', simulate: false });
    expect(parseRunArgs(['-c', 'a.json'], 'd')).toEqual({ config: 'a.json', simulate: false });
    expect(parseRunArgs(['--config', 'a.json', '--simulate'], 'd')).toEqual({ config: 'a.json', simulate: true });
    expect(parseRunArgs(['--simulate', '--config=b.json'], 'd')).toEqual({ config: 'b.json', simulate: true });
    expect(parseRunArgs(['-cc.json'], 'd')).toEqual({ config: 'c.json', simulate: false });
  });

  it('leaves help, unknown options, missing values and extra arguments to commander', () => {
    for (const args of [['--help'], ['-h'], ['--bogus'], ['-c'], ['--config'], ['--config='], ['-c', '--simulate'], ['extra'], ['--config', '']]) {
      expect(parseRunArgs(args, 'd'), args.join(' ')).toBeUndefined();
    }
  });
});
