// Loads the native serial addon (@serialport/bindings-cpp) of an installed tree the way the daemon will, with the node
// that runs this file: node addon-check.cjs DIR. Prints the binary loaded; on failure one line naming why, exit 1.
// Used before an install replaces the running one (install.sh), after the package is unpacked (postinst) and by the
// arm smoke test.
'use strict';
const path = require('node:path');

const dir = path.resolve(process.argv[2] || '.');
try {
  const pkg = require.resolve('@serialport/bindings-cpp/package.json', { paths: [dir] });
  const root = path.dirname(pkg);
  const gypBuild = require(require.resolve('node-gyp-build', { paths: [root] }));
  const file = gypBuild.path(root);
  const binding = require(file);
  for (const fn of ['open', 'close', 'set', 'update', 'drain', 'Poller']) {
    if (typeof binding[fn] !== 'function') throw new Error(`${file} has no ${fn}()`);
  }
  process.stdout.write(`@serialport/bindings-cpp/${path.relative(root, file)}\n`);
} catch (err) {
  const why = String((err && err.message) || err).split('\n')[0];
  process.stderr.write(`the serial addon does not load with Node.js ${process.version} on linux-${process.arch} (${why})\n`);
  process.exit(1);
}
