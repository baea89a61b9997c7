// Sends RL.CHECK through ioredis's Cluster (RESP3, its default) to a
// cellgate cluster whose first node listens on 127.0.0.1:<port>. ioredis
// knows no key of RL.CHECK (it is not in its command table), so it sends
// each one to a node of its choice and follows -MOVED to the node that
// serves the descriptor's counter.
//
//     node rl_shards.mjs <port> <domain> <tries> <entry>...
//
// Each entry ("user=alice") is one descriptor, asked <tries> times. Prints
// one JSON line {entry: requests allowed}.
import Redis from "ioredis";

const [port, domain, tries, ...entries] = process.argv.slice(2);
const io = new Redis.Cluster([{ host: "127.0.0.1", port: Number(port) }]);
const allowed = {};
for (const entry of entries) {
    allowed[entry] = 0;
    for (let t = 0; t < Number(tries); t++) {
        const reply = await io.call("RL.CHECK", domain, entry);
        if (Number(reply[0]) === 0) {
            allowed[entry]++;
        }
    }
}
io.disconnect();
console.log(JSON.stringify(allowed));
