// Reads a connection's peer credentials in process the way the daemon will (loadSockopt() of the installed tree's
// dist/src/control/server/peer-getsockopt.js: getsockopt(SO_PEERCRED) through koffi), with the node that runs this
// file: node peer-check.cjs DIR. This process connects to a Unix socket of its own in a temporary directory; the peer
// read on the accepted side must be this process (pid, uid, gid, and its groups when they are read).
// Prints `read in process (...)`, exit 0. Exit 2, one line saying why, when it is not read in process here (the daemon
// then asks perl per connection: an ARMv6 Pi, koffi's binary missing or too new for this libc). Exit 1, one line,
// when it loads but fails or reads another peer (the daemon would refuse or misjudge its clients).
// Used by install.sh, packaging/build-deb.sh and the arm smoke test.
'use strict';
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const dir = path.resolve(process.argv[2] || '.');
const end = (code, line) => {
  (code === 0 ? process.stdout : process.stderr).write(`${line}\n`);
  process.exitCode = code;
};

/** The accepted side of a connection this process makes to itself; calls use(fd) with its file descriptor. */
async function selfConnection(use) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pulsa-bridge-peer-check-'));
  const server = net.createServer();
  let client;
  try {
    const file = path.join(tmp, 'control.sock');
    await new Promise((resolve, reject) => server.once('error', reject).listen(file, resolve));
    const accepted = new Promise((resolve) => server.once('connection', resolve));
    client = net.connect(file);
    client.on('error', () => {});
    const socket = await accepted;
    const fd = socket._handle && socket._handle.fd;
    if (typeof fd !== 'number' || fd < 0) throw new Error('the accepted socket has no file descriptor');
    try {
      return use(fd);
    } finally {
      socket.destroy();
    }
  } finally {
    if (client) client.destroy();
    server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main() {
  const { loadSockopt } = await import(
    pathToFileURL(path.join(dir, 'dist/src/control/server/peer-getsockopt.js')).href
  );
  const load = await loadSockopt();
  if (!load.ok) return end(2, `not read in process here (${load.error}): perl reads them, one run per connection`);
  const got = await selfConnection((fd) => load.reader.read(fd));
  const want = { pid: process.pid, uid: process.geteuid(), gid: process.getegid() };
  const text = (c) => `pid ${c.pid}, uid ${c.uid}, gid ${c.gid}`;
  if (got.pid !== want.pid || got.uid !== want.uid || got.gid !== want.gid) {
    return end(1, `read in process (${load.reader.via}) gave ${text(got)}, not this process's ${text(want)}`);
  }
  // the groups decide the operating level: the same set as this process's (when SO_PEERGROUPS gave them; /proc else)
  const set = (gid, groups) => [...new Set([gid, ...groups])].sort((a, b) => a - b).join(',');
  const mine = set(want.gid, process.getgroups());
  if (got.groups && set(got.gid, got.groups) !== mine) {
    return end(
      1,
      `read in process (${load.reader.via}) gave groups ${set(got.gid, got.groups)}, not this process's ${mine}`,
    );
  }
  const groups = got.groups ? `groups ${mine}` : 'groups from /proc (SO_PEERGROUPS gave none)';
  end(0, `read in process (${load.reader.via}): ${text(got)}, ${groups}, this process's own`);
}

main().catch((err) => {
  const why = String((err && err.message) || err).split('\n')[0];
  end(1, `the in-process read failed with Node.js ${process.version} on linux-${process.arch} (${why})`);
});
