/**
 * The floors of docs/architecture.md, checked on every `npm test`: what each part of src/ may import
 * (ALLOWED, every folder and top-level file), no import cycle, the pure modules' bans. An import that runs against
 * the floors fails here with the file, the line and the rule it breaks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface Import {
  file: string; // relative to src/, e.g. serial/probe.ts
  line: number;
  target: string; // relative to src/ for local imports ('at/channel.ts'), else the package or node: name
  typeOnly: boolean; // `import type ... from` or `typeof import('...')`: erased at compile time, loads nothing
}

function importsOf(abs: string): Import[] {
  const out: Import[] = [];
  const text = readFileSync(abs, 'utf8');
  const re = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm;
  for (const m of text.matchAll(re)) {
    const spec = (m[1] ?? m[2] ?? m[3])!;
    const line = text.slice(0, m.index).split('\n').length;
    // A built-in named without its prefix ('http') is the same module as 'node:http': rules name the prefixed form.
    // (Node 24 lists some prefixed-only names, 'node:test', in builtinModules: those are left as they are.)
    const target = spec.startsWith('.')
      ? relative(SRC, resolve(dirname(abs), spec)).replace(/\.js$/, '.ts')
      : !spec.startsWith('node:') && builtinModules.includes(spec)
        ? `node:${spec}`
        : spec;
    out.push({
      file: relative(SRC, abs),
      line,
      target,
      typeOnly:
        /^\s*(?:import|export)\s+type\s/.test(m[0]) ||
        /typeof\s+$/.test(text.slice(Math.max(0, m.index - 10), m.index)),
    });
  }
  return out;
}

const ALL = files(SRC).flatMap(importsOf);
const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);
/** A forbidden entry: `pkg:<name>` is a package or node: module, anything else a folder or file under src/. */
const matches = (i: Import, f: string) => (f.startsWith('pkg:') ? i.target === f.slice(4) : under(i.target, f));

/** Helpers any part may import: error classes, the logger, redaction, terminal escaping, time formats, the version. */
const SHARED = ['errors.ts', 'log.ts', 'log', 'redact.ts', 'terminal-text.ts', 'time-format.ts', 'version.ts'];

/**
 * The part of src/ a file belongs to: its top-level folder or file; control/ is three parts (the daemon's side of the
 * socket, the CLI's side, the wire protocol both speak).
 */
function partOf(path: string): string {
  const [top, second] = path.split('/');
  return top === 'control' && second !== undefined ? `control/${second}` : top!;
}

const BELOW_THE_ROOT = [
  'at',
  'balance',
  'canary',
  'config.ts',
  'config-canary.ts',
  'config-file.ts',
  'config-fields.ts',
  'config-spool.ts',
  'config-control.ts',
  'config-reseller.ts',
  'config-webhook.ts',
  'control/protocol.ts',
  'control/server',
  'filter',
  'forward',
  'health',
  'http',
  'metrics',
  'modem',
  'ops',
  'receive',
  'reseller',
  'sd-notify.ts',
  'serial',
  'virtual-modem',
  'sms',
  'spool',
  'state',
  'status.ts',
];

/**
 * What each part of src/ may import besides SHARED, floor by floor from the bottom; an arrow to anything else points
 * up or sideways and fails. Every part has an entry: a new folder or top-level file needs one.
 */
const ALLOWED: Record<string, string[]> = {
  // helpers
  'errors.ts': [],
  'redact.ts': [],
  'terminal-text.ts': [],
  'time-format.ts': [],
  'version.ts': [],
  log: [],
  'log.ts': [],
  'config-fields.ts': [],
  'sd-notify.ts': [],
  // the ground: bytes and ports, pure decoding and rules, the spool, one HTTP request, the health model, balance parsing
  serial: [],
  sms: [],
  filter: [],
  spool: [],
  http: [],
  health: [],
  balance: [],
  'control/protocol.ts': [],
  // the local stand-in of the service reads operator SMS as the server would
  demo: ['sms'],
  // the virtual modem is a device behind a serial link; the AT layer reads lines off one
  'virtual-modem': ['serial', 'balance'],
  at: ['serial'],
  modem: ['at', 'serial', 'sms', 'virtual-modem'],
  state: ['modem'],
  // operator commands, the same on both paths (through the daemon or on the port)
  ops: ['at', 'modem', 'sms', 'control/protocol.ts'],
  transfer: ['ops', 'control/protocol.ts', 'sms', 'reseller'],
  'config-file.ts': [],
  'config-spool.ts': ['config-file.ts', 'config-fields.ts'],
  'config-control.ts': ['config-file.ts', 'config-fields.ts', 'config-spool.ts'],
  'config-reseller.ts': ['config-fields.ts', 'transfer'],
  'config-webhook.ts': ['config-fields.ts'],
  'config-canary.ts': ['config-fields.ts', 'transfer'],
  'config.ts': [
    'config-canary.ts',
    'config-file.ts',
    'config-fields.ts',
    'config-spool.ts',
    'config-control.ts',
    'config-reseller.ts',
    'config-webhook.ts',
    'balance',
    'modem',
    'serial',
    'spool',
    'transfer',
  ],
  // the stages
  receive: ['at', 'modem', 'sms', 'spool', 'config.ts'],
  forward: ['spool', 'http', 'config.ts'],
  reseller: ['http'],
  // what the running daemon reports, and who shows it
  // the daemon's own test transfers, on a schedule, with their money ledger
  canary: ['config-canary.ts', 'ops', 'reseller', 'spool', 'transfer', 'control/protocol.ts'],
  'status.ts': ['balance', 'canary', 'forward', 'health', 'receive', 'spool'],
  metrics: ['status.ts', 'forward', 'spool', 'health'],
  // the control socket: the daemon's side and the CLI's side never import each other
  'control/server': ['control/protocol.ts', 'ops', 'at', 'modem'],
  'control/client': ['control/protocol.ts', 'ops', 'balance'],
  // the composition root and its parts
  daemon: BELOW_THE_ROOT,
  'daemon.ts': [...BELOW_THE_ROOT, 'daemon'],
  'demo.ts': ['daemon.ts', 'demo', 'config.ts', 'virtual-modem'],
  // the command line on top: everything but the daemon's side of the socket
  cli: [
    ...BELOW_THE_ROOT.filter((p) => p !== 'control/server'),
    'control/client',
    'daemon',
    'daemon.ts',
    'reseller',
    'transfer',
  ],
  'cli.ts': ['cli'],
};

/** Local imports (src/ to src/) that ALLOWED does not allow, as lines naming the file, the line and the rule. */
function backArrows(imports: readonly Import[]): string[] {
  return imports.flatMap((i) => {
    if (!i.target.endsWith('.ts')) return [];
    const from = partOf(i.file);
    const to = partOf(i.target);
    const allowed = ALLOWED[from];
    if (from === to || SHARED.includes(to) || allowed?.includes(to)) return [];
    return [
      `src/${i.file}:${i.line} imports ${i.target}: ${from} may import ${allowed ? [...allowed, 'the helpers'].join(', ') : '(no rule: add one to ALLOWED)'}`,
    ];
  });
}

/** [from folder, forbidden targets (folders, files or package names), why] */
const RULES: Array<[string, string[], string]> = [
  [
    'serial',
    ['at', 'modem', 'receive', 'control', 'cli', 'cli.ts', 'daemon.ts', 'virtual-modem'],
    'serial is the bottom layer: it knows bytes and ports, not AT or modems',
  ],
  [
    'at',
    ['modem', 'receive', 'spool', 'forward', 'control', 'cli', 'cli.ts', 'daemon.ts'],
    'the AT layer knows lines and commands, not what a modem or a message is',
  ],
  [
    'sms',
    [
      'at',
      'modem',
      'serial',
      'receive',
      'spool',
      'forward',
      'control',
      'cli',
      'cli.ts',
      'daemon.ts',
      'pkg:node:fs',
      'pkg:node:fs/promises',
      'pkg:node:net',
      'pkg:node:http',
      'pkg:serialport',
    ],
    'sms/ is pure: PDUs in, messages out',
  ],
  [
    'filter',
    [
      'at',
      'modem',
      'serial',
      'receive',
      'spool',
      'forward',
      'control',
      'cli',
      'cli.ts',
      'daemon.ts',
      'pkg:node:fs',
      'pkg:node:fs/promises',
      'pkg:node:net',
      'pkg:node:http',
      'pkg:serialport',
    ],
    'filter/ is pure',
  ],
  [
    'forward/policy.ts',
    ['pkg:node:fs', 'pkg:node:fs/promises', 'pkg:node:net', 'pkg:node:http', 'pkg:serialport', 'spool', 'at', 'modem'],
    'the retry policy is a pure function',
  ],
  [
    'balance/parse.ts',
    ['pkg:node:fs', 'pkg:node:fs/promises', 'pkg:node:net', 'pkg:serialport', 'at', 'modem', 'control'],
    'balance parsing is pure',
  ],
  [
    'transfer/flows.ts',
    ['pkg:node:fs', 'pkg:node:fs/promises', 'pkg:node:net', 'pkg:serialport', 'at', 'modem', 'control'],
    'transfer flows are data',
  ],
  [
    'control/protocol.ts',
    ['pkg:node:fs', 'pkg:node:fs/promises', 'pkg:node:net', 'at', 'modem', 'serial', 'spool'],
    'the wire protocol is pure',
  ],
  [
    'spool',
    ['forward', 'modem', 'at', 'serial', 'receive', 'control'],
    'the spool stores records; it does not know who reads or writes them',
  ],
  [
    'modem',
    ['receive', 'spool', 'forward', 'control', 'cli', 'cli.ts', 'daemon.ts'],
    'the modem layer does not know the receive path or the spool',
  ],
];

/**
 * The import cycles of src/: strongly connected components (Tarjan) of the graph of every import between its files,
 * type-only and dynamic ones included (a reader's picture of the structure draws them all). Each is listed as its files.
 */
function importCycles(imports: readonly Import[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const i of imports)
    if (i.target.endsWith('.ts')) (next.get(i.file) ?? next.set(i.file, new Set()).get(i.file)!).add(i.target);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next.get(v)?.has(v)) cycles.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

describe('architecture: imports follow the data flow', () => {
  it('the cycle finder finds a cycle (a -> b -> c -> a) and leaves a chain alone', () => {
    const edge = (file: string, target: string): Import => ({ file, line: 1, target, typeOnly: false });
    expect(
      importCycles([edge('a.ts', 'b.ts'), edge('b.ts', 'c.ts'), edge('c.ts', 'a.ts'), edge('c.ts', 'd.ts')]),
    ).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    expect(importCycles([edge('a.ts', 'b.ts'), edge('b.ts', 'c.ts')])).toEqual([]);
  });

  it('no import cycle anywhere in src/ (type-only and dynamic imports count)', () => {
    const lines = importCycles(ALL).map((files) => {
      const inside = ALL.filter((i) => files.includes(i.file) && files.includes(i.target));
      return `cycle: ${inside.map((i) => `src/${i.file}:${i.line} -> ${i.target}`).join(', ')}`;
    });
    expect(lines).toEqual([]);
  });

  it('finds the imports it checks (the scanner itself works)', () => {
    expect(ALL.some((i) => i.file === 'daemon.ts' && under(i.target, 'spool'))).toBe(true);
    expect(ALL.some((i) => i.target === 'serialport')).toBe(true);
  });

  it('every part of src/ has a rule in ALLOWED, and every rule names a part that exists', () => {
    const parts = new Set(
      ALL.flatMap((i) => [partOf(i.file), ...(i.target.endsWith('.ts') ? [partOf(i.target)] : [])]),
    );
    const named = new Set(Object.values(ALLOWED).flat());
    expect([...parts].filter((p) => !(p in ALLOWED))).toEqual([]);
    expect([...Object.keys(ALLOWED), ...named, ...SHARED].filter((p) => !parts.has(p))).toEqual([]);
  });

  it('imports point only down the floors (ALLOWED)', () => {
    expect(backArrows(ALL)).toEqual([]);
  });

  it('a back-arrow is found: the spool importing the forwarder, the metrics importing the daemon', () => {
    const edge = (file: string, target: string): Import => ({ file, line: 7, target, typeOnly: false });
    expect(
      backArrows([
        edge('spool/store.ts', 'forward/forwarder.ts'),
        edge('metrics/page-view.ts', 'daemon.ts'),
        edge('forward/forwarder.ts', 'spool/store.ts'),
      ]),
    ).toEqual([
      'src/spool/store.ts:7 imports forward/forwarder.ts: spool may import the helpers',
      'src/metrics/page-view.ts:7 imports daemon.ts: metrics may import status.ts, forward, spool, health, the helpers',
    ]);
  });

  it.each(RULES)('%s never imports %j', (from, forbidden, why) => {
    const bad = ALL.filter(
      (i) => (from.endsWith('.ts') ? i.file === from : under(i.file, from)) && forbidden.some((f) => matches(i, f)),
    );
    expect(bad.map((b) => `src/${b.file}:${b.line} imports ${b.target} (${why})`)).toEqual([]);
  });

  it('nothing below the CLI imports the CLI', () => {
    const bad = ALL.filter(
      (i) => !under(i.file, 'cli') && i.file !== 'cli.ts' && (under(i.target, 'cli') || i.target === 'cli.ts'),
    );
    expect(bad.map((b) => `src/${b.file}:${b.line} imports ${b.target}`)).toEqual([]);
  });

  it('only serial/ imports serialport; HTTP clients only through http/request.ts; koffi only for SO_PEERCRED', () => {
    expect(ALL.filter((i) => i.target === 'koffi').map((i) => i.file)).toEqual(['control/server/peer-getsockopt.ts']);
    const bad = ALL.filter(
      (i) =>
        (i.target === 'serialport' && !under(i.file, 'serial')) ||
        (i.target === 'node:https' && i.file !== 'http/request.ts'),
    );
    expect(bad.map((b) => `src/${b.file}:${b.line} imports ${b.target}`)).toEqual([]);
  });

  it('the virtual modem enters through the link factory only: no other module imports it or names simulation', () => {
    // The simulator's own command (`pulsa-bridge simulate`) and the demo may use it; everything else sees a port.
    const users = new Set(['modem/factory.ts', 'cli/simulate.ts', 'demo.ts']);
    const bad = ALL.filter(
      (i) => under(i.target, 'virtual-modem') && !under(i.file, 'virtual-modem') && !users.has(i.file),
    );
    expect(bad.map((b) => `src/${b.file}:${b.line} imports ${b.target}`)).toEqual([]);
    const mentions = files(SRC)
      .map((f) => relative(SRC, f).split(sep).join('/'))
      .filter((f) => !under(f, 'virtual-modem') && !under(f, 'demo') && !users.has(f) && f !== 'serial/port-kind.ts')
      .flatMap((f) =>
        readFileSync(join(SRC, f), 'utf8')
          .split('\n')
          .map((line, n) => ({ f, n: n + 1, line })),
      )
      .filter(({ line }) => /simulat/i.test(line.replace(/\/\/.*$|^\s*\*.*$|\/\*.*?\*\//g, '')))
      // The CLI's --simulate option names the port it stands for; the codec refuses an older release's `simulated` field.
      .filter(
        ({ f, line }) =>
          !/--simulate|'simulate'|simulate\?:|opts\.simulate|SIMULATE_PORT/.test(line) &&
          !(f === 'spool/codec.ts' && /obj\.simulated/.test(line)),
      );
    expect(mentions.map((m) => `src/${m.f}:${m.n}: ${m.line.trim()}`)).toEqual([]);
  });
});
