// ioredis 6 with `sentinels:` (tests/integration/test_sentinel.py): ask
// the Sentinels for the primary of "mymaster", send one CL.THROTTLE there
// and print the port ioredis connected to, which the test compares with
// what the Sentinels and redis-py say.
//   node sentinel.mjs <sentinel port>...
import Redis from "ioredis";

const sentinels = process.argv.slice(2).map((p) => ({ host: "127.0.0.1", port: Number(p) }));
const client = new Redis({ sentinels, name: "mymaster", lazyConnect: true, maxRetriesPerRequest: 3 });
try {
  await client.connect();
  const reply = await client.call("CL.THROTTLE", "ioredis-sentinel", 5, 1, 3600);
  const role = await client.call("ROLE");
  console.log(JSON.stringify({ port: client.stream.remotePort, reply, role: role[0] }));
} finally {
  client.disconnect();
}
