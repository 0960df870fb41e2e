/**
 * The control plane as operations use it: the compiled `bin/pulsa-bridge run --config F` in its own process, its modem
 * on `pulsa-bridge simulate --link PATH` (socat pty, native binding), a real webhook on loopback, and the CLI as
 * separate processes talking to the daemon's socket: while SMS keep arriving (none lost), two clients at once, a client
 * killed mid-request, the socket's permissions (another uid, through runuser, when it can be used here), and the
 * fallback to the port when no daemon runs (the same output).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PERL } from '../../src/control/server/peer.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { bin, CliProcess, DaemonProcess, distBuilt, killAll, runCli, SimProcess } from '../support/daemon.js';
import { tempDir } from '../support/tmp.js';
import { until } from '../support/until.js';
import { hasSocat } from '../support/pty.js';
import { groupWithoutNobody } from '../support/users.js';

/** Root can run a command as `nobody` here: the other-uid checks run. */
const asNobody =
  hasSocat &&
  process.getuid?.() === 0 &&
  spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']).status === 0;
/** The checkout itself may be private (a clone under a 0700 temp dir): then `nobody` runs a bare socket client instead of the CLI. */
const nobodyRunsCli =
  asNobody && spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, bin, '--version']).status === 0;
/** Connects to the socket as `nobody`: 'ok' or the error code (EACCES when the socket's mode and group refuse it). */
function connectAsNobody(socket: string): string {
  const script = `require('node:net').connect(${JSON.stringify(socket)}).on('connect',()=>{process.stdout.write('ok');process.exit(0)}).on('error',(e)=>{process.stdout.write(e.code);process.exit(0)})`;
  return spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', script], { encoding: 'utf8' }).stdout;
}

/**
 * A client that pipelines: argv `socket n pad` sends n `at` requests (the command padded with `pad` spaces) in one go,
 * reads nothing until the daemon stops taking them, then prints every reply it was sent. Blocking I/O (perl, which
 * the daemon needs anyway): a write that fails once the daemon drops the client loses none of the replies already
 * received, where a Node socket is destroyed on its failed write with what it had not read yet.
 */
const FLOODER = String.raw`
use strict; use Socket;
$SIG{PIPE} = 'IGNORE';
my ($path, $n, $pad) = @ARGV;
socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
connect($s, pack_sockaddr_un($path)) or die "connect $path: $!\n";
my $flood = join '', map { qq({"v":1,"id":$_,"op":"at","command":"AT+CSQ) . (' ' x $pad) . qq("}\n) } 1 .. $n;
for (my $off = 0; $off < length $flood; ) {
  my $w = syswrite($s, $flood, length($flood) - $off, $off);
  last unless defined $w;
  $off += $w;
}
my $buf;
print $buf while sysread($s, $buf, 65536);
`;
const execFileAsync = promisify(execFile);

/** A CLI command to its end, as this user or (`as`) another. */
const cli = (args: string[], as?: string) => runCli(args, as ? { as } : {});

let dir: string;
let cleanup: () => Promise<void>;
let server: TestServer;

beforeEach(async () => {
  expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
  ({ dir, cleanup } = await tempDir('control'));
  server = await startServer([reply(200, '{"success":true}')]);
});

afterEach(async () => {
  await killAll();
  await server.close();
  await cleanup();
});

const daemonConfig = (link: string, control: Record<string, unknown> = {}): Promise<string> =>
  writeConfig(
    dir,
    {
      webhook: testWebhook(server.url),
      modems: [{ name: 'tsel-1', port: link, senders: ['858'], sweepIntervalSec: 5 }],
      control,
    },
    { mode: 0o644 },
  );

async function startModem(): Promise<{ sim: SimProcess; link: string }> {
  const link = path.join(dir, 'modem');
  return { sim: await SimProcess.start(link, [], 15_000), link };
}

const startDaemon = (config: string): Promise<DaemonProcess> =>
  DaemonProcess.start(config, ['ready: SIMCOM', 'control socket listening'], 40_000);

const texts = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `Anda mendapatkan penambahan pulsa Rp ${1000 + i} ${tag}`);

describe.skipIf(!hasSocat)('the CLI through the running daemon (real processes)', () => {
  it('info and sms list through the daemon, two clients at once, while SMS keep arriving: none lost', async () => {
    const { sim, link } = await startModem();
    const config = await daemonConfig(link);
    const daemon = await startDaemon(config);
    const sent = texts(8, 'during diagnostics');
    const feeding = (async () => {
      for (const t of sent) {
        sim.child.stdin!.write(`sms 858 ${t}\n`);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    const clients = [];
    for (let round = 0; round < 3; round++) {
      // Two clients at once, each a separate CLI process on its own connection.
      const [info, list] = await Promise.all([
        cli(['info', '--config', config, '--verbose']),
        cli(['sms', 'list', '--config', config, '--json']),
      ]);
      clients.push(info, list);
    }
    await feeding;
    for (const c of clients) expect(c.code, c.err).toBe(0);
    for (const info of clients.filter((_, i) => i % 2 === 0)) {
      expect(info.out).toMatch(/^name: tsel-1\n/);
      expect(info.out).toContain('operator: TELKOMSEL');
      expect(info.err).toContain('path: the running daemon');
    }
    for (const list of clients.filter((_, i) => i % 2 === 1)) expect(Array.isArray(JSON.parse(list.out))).toBe(true);
    await until(() => server.requests.length >= sent.length, `all ${sent.length} SMS at the webhook`, 30_000);
    const received = server.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { message: string }).message);
    expect([...received].sort()).toEqual([...sent].sort());
    expect(daemon.child.exitCode).toBeNull();
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 90_000);

  it('a client killed mid-request changes nothing: the daemon answers the next one and keeps forwarding', async () => {
    const { sim, link } = await startModem();
    const config = await daemonConfig(link);
    const daemon = await startDaemon(config);
    const socket = path.join(dir, 'spool', 'control.sock');
    // A raw client: a request, then gone before the answer (half a line first, to be sure nothing waits for the rest).
    for (let i = 0; i < 5; i++) {
      const s = connect(socket);
      await new Promise((r) => s.once('connect', r));
      s.write('{"v":1,"id":1,"op":"sms.list","modem":"tsel-1"}\n{"v":1,"id":2,"op":"info"');
      s.destroy();
    }
    // A CLI process killed while its request is in the daemon's hands.
    const victim = new CliProcess(['sms', 'list', '--config', config], 'ignore');
    await new Promise((r) => setTimeout(r, 300));
    victim.child.kill('SIGKILL');
    await victim.exit;
    sim.child.stdin!.write(`sms 858 ${texts(1, 'after the killed client')[0]}\n`);
    await until(() => server.requests.length === 1, 'the SMS at the webhook', 20_000);
    const info = await cli(['info', '--config', config]);
    expect(info.code, info.err).toBe(0);
    expect(info.out).toMatch(/^name: tsel-1\n/);
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.out.filter((l) => /"level":(50|60)/.test(l))).toEqual([]); // no error logged for any of it
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 60_000);

  it('no daemon: the command opens the port itself, with the same output as through the daemon', async () => {
    const { link } = await startModem();
    const config = await daemonConfig(link);
    const daemon = await startDaemon(config);
    const viaDaemon = await cli(['info', '--config', config]);
    const listViaDaemon = await cli(['sms', 'list', '--config', config]);
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
    expect(existsSync(path.join(dir, 'spool', 'control.sock'))).toBe(false); // removed at stop
    const direct = await cli(['info', '--config', config, '--verbose']);
    expect(direct.err).toContain('path: direct, opening');
    expect(direct.code).toBe(0);
    expect(direct.out).toBe(viaDaemon.out);
    expect(await cli(['sms', 'list', '--config', config])).toEqual({ ...listViaDaemon });
    expect(viaDaemon.out).toMatch(/^name: tsel-1\n/);
  }, 60_000);

  it('the socket is 0660: another uid is refused with a hint naming the group to join; a member of the socket group gets in', async () => {
    const { link } = await startModem();
    await chmod(dir, 0o755); // `nobody` may read the config; the socket's own mode decides
    const runDir = path.join(dir, 'run');
    await mkdir(runDir, { mode: 0o755 });
    await chmod(runDir, 0o755);
    const socket = path.join(runDir, 'control.sock');
    let daemon = await startDaemon(await daemonConfig(link, { socket }));
    const st = await stat(socket);
    expect(st.mode & 0o777).toBe(0o660);
    expect(st.gid).toBe(process.getgid!());
    if (asNobody) expect(connectAsNobody(socket)).toBe('EACCES');
    if (nobodyRunsCli) {
      // The socket of root's group (no control.group, the daemon run as root): sudo, never "join root".
      const refused = await cli(['info', '--config', path.join(dir, 'config.json')], 'nobody');
      expect(refused.code).toBe(1);
      expect(refused.err).toBe(
        `error: permission denied on the control socket ${socket}\nhint: the socket belongs to root's group (control.group unset, the daemon run as root): run with sudo, or set control.group to the group whose members may read\n`,
      );
    }
    daemon.child.kill('SIGTERM');
    await daemon.exit;
    if (nobodyRunsCli) {
      // The socket of a group nobody is not in (the package's pulsa-bridge): the hint names that group.
      const group = groupWithoutNobody();
      daemon = await startDaemon(await daemonConfig(link, { socket, group: group.name }));
      expect((await stat(socket)).gid).toBe(group.gid);
      const refused = await cli(['info', '--config', path.join(dir, 'config.json')], 'nobody');
      expect(refused.code).toBe(1);
      expect(refused.err).toBe(
        `error: permission denied on the control socket ${socket}\nhint: reading needs the socket's group, ${group.name} (control.group), operating also pulsa-bridge-ops (control.operateGroup): sudo usermod -aG ${group.name} $USER, then log in again\n`,
      );
      daemon.child.kill('SIGTERM');
      await daemon.exit;
    }
    daemon = await startDaemon(await daemonConfig(link, { socket, group: 'nogroup' }));
    expect((await stat(socket)).gid).toBe(65534);
    if (asNobody) expect(connectAsNobody(socket)).toBe('ok');
    if (nobodyRunsCli) {
      const member = await cli(['info', '--config', path.join(dir, 'config.json')], 'nobody');
      expect(member.code, member.err).toBe(0);
      expect(member.out).toMatch(/^name: tsel-1\n/);
    }
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 120_000);
  it.skipIf(!nobodyRunsCli)(
    'two levels: the socket group reads, control.operateGroup operates; every request is logged with the peer uid and pid',
    async () => {
      const { link } = await startModem();
      await chmod(dir, 0o755);
      const runDir = path.join(dir, 'run');
      await mkdir(runDir, { mode: 0o755 });
      await chmod(runDir, 0o755);
      const socket = path.join(runDir, 'control.sock');
      const config = path.join(dir, 'config.json');
      // nobody is in nogroup (the socket's group) but not in the operating group (the default, absent here).
      let daemon = await startDaemon(await daemonConfig(link, { socket, group: 'nogroup' }));
      const read = await cli(['info', '--config', config], 'nobody');
      expect(read.code, read.err).toBe(0);
      const refused = await cli(['at', '--config', config, 'AT+CSQ'], 'nobody');
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(
        /^error: `at` needs the operating level: (?:group pulsa-bridge-ops \(control.operateGroup\) does not exist on this host|uid 65534 is not in group pulsa-bridge-ops \(control.operateGroup\))\nhint: an administrator adds the operator with `sudo usermod -aG pulsa-bridge-ops USER`/,
      );
      const balance = await cli(
        ['balance', '--config', config, '--modem', 'tsel-1', '--code', '*858*081234567890*5000#', '--reply', '1'],
        'nobody',
      );
      expect(balance.code).toBe(1);
      expect(balance.err).toMatch(
        /`balance` with a code or replies \(a USSD session that can move credit\) needs the operating level/,
      );
      // The daemon's lines reach this process through a pipe: wait for them rather than read them at once.
      await until(
        () =>
          daemon.logged('at from uid 65534 pid') &&
          daemon.out.filter((l) => l.includes('control request from uid 65534 pid ')).length >= 3,
        'the requests and the refusals in the log',
        10_000,
      );
      const requests = daemon.out
        .filter((l) => l.includes('control request from uid 65534 pid '))
        .map((l) => JSON.parse(l) as { peerUid: number; peerPid: number; msg: string });
      expect(requests.map((r) => r.msg.replace(/pid \d+ \(connection \d+\)/, 'pid P'))).toEqual(
        expect.arrayContaining([
          'control request from uid 65534 pid P: info',
          'control request from uid 65534 pid P: at "AT+CSQ"',
        ]),
      );
      expect(requests.every((r) => r.peerUid === 65534 && r.peerPid > 1)).toBe(true);
      expect(daemon.logged('"level":40') && daemon.logged('from uid 65534 pid')).toBe(true); // the refusal, at warn
      daemon.child.kill('SIGTERM');
      await daemon.exit;
      // The same user once nogroup is the operating group: `at` goes through, and a USSD code is logged as such at info.
      daemon = await startDaemon(await daemonConfig(link, { socket, group: 'nogroup', operateGroup: 'nogroup' }));
      const allowed = await cli(['at', '--config', config, 'AT+CSQ;+CUSD=1,"*858*081234567890*5000#",15'], 'nobody');
      expect(allowed.code, allowed.err).toBe(0);
      await until(
        () => daemon.logged('on tsel-1: dials') || daemon.logged('USSD AT+CUSD'),
        'the USSD code in the log',
        10_000,
      );
      const moves = daemon.out
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter(
          (l) =>
            (l.level === 30 && l.msg.includes('AT+CUSD=1,\"*858*081234567890*5000#\"')) ||
            (l.msg.includes('*858*081234567890*5000#') && l.msg.includes('uid 65534')),
        );
      expect(moves.length).toBeGreaterThan(0);
      expect(moves.every((l) => l.level === 30)).toBe(true);
      daemon.child.kill('SIGTERM');
      expect((await daemon.exit).code).toBe(0);
    },
    90_000,
  );

  it('a client pipelining 4 KiB `at` lines is answered busy and dropped; idle connections cannot lock the CLI out', async () => {
    const { link } = await startModem();
    const config = await daemonConfig(link);
    const daemon = await startDaemon(config);
    const socket = path.join(dir, 'spool', 'control.sock');
    // 300 requests back to back, no reply read meanwhile: a few run, the rest are `busy`, then the client is dropped.
    const { stdout } = await execFileAsync(PERL, ['-e', FLOODER, socket, '300', '4000'], { timeout: 30_000 });
    const answers = stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { ok: boolean; error?: { code: string } })
      .map((r) => (r.ok ? 'ok' : r.error!.code));
    expect(answers.filter((a) => a === 'busy').length).toBeGreaterThanOrEqual(32);
    expect(answers.length).toBeLessThan(300);
    // Its own log line, on another pipe than the connection: it may come a moment after the client saw the end.
    await until(() => daemon.logged('went on sending past busy'), 'the daemon to log the client it dropped', 10_000);
    // 40 connections that never send anything: the CLI is told the socket is full, then gets in once they are closed.
    const idle = Array.from({ length: 40 }, () =>
      connect(socket)
        .on('error', () => undefined)
        .resume(),
    );
    await until(() => idle.every((s) => !s.connecting), 'the idle connections', 5000);
    const full = await cli(['info', '--config', config]);
    expect(full.code).toBe(1);
    expect(full.err).toMatch(/busy|full/);
    await until(
      () => idle.every((s) => s.destroyed || s.readableEnded),
      'the daemon to close the idle connections',
      20_000,
    );
    // A client sees its end a moment before the daemon counts the connection closed: wait for the daemon's side too.
    await until(
      () => daemon.count('control client disconnected') >= daemon.count('control client connected'),
      'the daemon to count every control connection closed',
      10_000,
    );
    const after = await cli(['info', '--config', config]);
    expect(after.code, after.err).toBe(0);
    expect(after.out).toMatch(/^name: tsel-1\n/);
    for (const s of idle) s.destroy();
    daemon.child.kill('SIGTERM');
    expect((await daemon.exit).code).toBe(0);
  }, 90_000);
});
