// Live traffic through ioredis's Cluster while a test grows and shrinks the
// cluster under it: CL.THROTTLE and INCR on keys of its own, round after
// round, until the file <stop> exists (or 600 s pass).
//
//     node cluster_traffic.mjs <port> <stop file> <keys>
//
// Prints one JSON line: {"throttle": {key: [sent, allowed]},
// "incr": {key: sent}, "errors": [messages]}. Every request is awaited
// before the next one on its key, so a reply that never came is an error,
// not a silent loss.
import fs from "node:fs";
import Redis from "ioredis";

const [port, stopFile, nkeys] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
const deadline = Date.now() + 600 * 1000;
const io = new Redis.Cluster([{ host: "127.0.0.1", port }], {
    retryDelayOnTryAgain: 20,
    retryDelayOnMoved: 0,
    maxRedirections: 64,
    redisOptions: { maxRetriesPerRequest: 0 },
});
const throttle = {};
const incr = {};
const errors = [];

for (let i = 0; i < nkeys; i++) {
    throttle[`io:t:${i}`] = [0, 0];
    incr[`io:c:${i}`] = 0;
}

async function round() {
    for (let i = 0; i < nkeys; i++) {
        const t = `io:t:${i}`;
        const c = `io:c:${i}`;
        try {
            // 20 a day: nothing comes back during a test.
            const reply = await io.call("CL.THROTTLE", t, "19", "20", "86400");
            throttle[t][0]++;
            if (Number(reply[0]) === 0) {
                throttle[t][1]++;
            }
            const n = await io.incr(c);
            incr[c]++;
            if (Number(n) === 1) {
                await io.expire(c, 3600);
            }
        } catch (e) {
            errors.push(String(e));
        }
    }
}

while (!fs.existsSync(stopFile) && Date.now() < deadline && errors.length < 20) {
    await round();
}
io.disconnect();
console.log(JSON.stringify({ throttle, incr, errors }));
