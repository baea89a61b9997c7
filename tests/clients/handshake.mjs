// node-redis connects as an application does (password, a client name),
// sends one command and quits: what its handshake sends is what MONITOR
// shows (test_client_commands.py). Usage: node handshake.mjs PORT PASSWORD
import { createClient } from 'redis';

const [port, password] = process.argv.slice(2);
const client = createClient({
  url: `redis://default:${password}@127.0.0.1:${port}`,
  name: 'handshake-app',
});
client.on('error', (e) => { console.error(e); process.exit(1); });
await client.connect();
console.log(await client.sendCommand(['CL.THROTTLE', 'handshake', '1', '1', '60']));
await client.quit();
