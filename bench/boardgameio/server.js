'use strict';
// The peer server: boardgame.io with Strands, its lobby and socket.io on one port, in-memory storage,
// bound to 127.0.0.1. Prints "listening" when ready (bench/peer.py waits for that line).
// Usage: PORT=8000 node server.js

const { Server, Origins } = require('boardgame.io/server');
const { Strands } = require('./strands');

const port = Number(process.env.PORT || 8000);
const server = Server({ games: [Strands], origins: [Origins.LOCALHOST] });

// Server.run passes `port` to http.Server#listen, so an object binds the loopback address only.
server.run({ port: { port, host: '127.0.0.1' } }).then(({ appServer }) => {
  const { address, port: bound } = appServer.address();
  console.log(`peer server pid=${process.pid} listening on ${address}:${bound}`);
});

// A clean exit on SIGTERM and SIGINT (so that node's --cpu-prof can write its profile).
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
