// Sends CL.THROTTLE through ioredis's Cluster and node-redis's createCluster
// (each in its default protocol, RESP3 for both) to a cellgate cluster whose
// first node listens on 127.0.0.1:<port>: 20 keys per client, each asked 6
// times with a burst of 5 an hour.
//
//     node cluster.mjs <port>
//
// Prints one JSON line {client: {key: requests allowed}}; the Python test
// (test_cluster_nodes.py) checks the counts and which node holds each key.
import Redis from "ioredis";
import { createCluster } from "redis";

const port = Number(process.argv[2]);
const KEYS = 20;
const TRIES = 6;

async function run(name, send) {
    const allowed = {};
    for (let i = 0; i < KEYS; i++) {
        const key = `node:${name}:${i}`;
        allowed[key] = 0;
        for (let t = 0; t < TRIES; t++) {
            const reply = await send(["CL.THROTTLE", key, "4", "1", "3600"]);
            if (Number(reply[0]) === 0) {
                allowed[key]++;
            }
        }
    }
    return allowed;
}

const result = {};
const io = new Redis.Cluster([{ host: "127.0.0.1", port }]);
result.ioredis = await run("ioredis", (args) => io.call(...args));
io.disconnect();

const nr = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
await nr.connect();
result["node-redis"] = await run("node-redis", (args) => nr.sendCommand(args[1], false, args));
await nr.quit();
console.log(JSON.stringify(result));
