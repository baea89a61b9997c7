// Runs CL.THROTTLE and every RL.* command (with COST, PEEK, MS, ALIGN, META,
// tiers, and the error replies) through ioredis and node-redis against
// cellgate at 127.0.0.1:<port>, in each client's default protocol and in the
// other one, checking exact replies and that HELLO negotiated the protocol
// the client asked for (CLIENT INFO resp=N).
//
//     node clients.mjs <port> <now_ms>
//
// The daemon runs on a frozen fake clock at <now_ms>, a whole minute, so every
// reply (timestamps included) is exact. Prints one line per failure and
// finally "N passed, M failed".
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const nowMs = Number(process.argv[3]);
let passed = 0;
let failed = 0;

async function check(name, fn) {
    try {
        await fn();
        passed++;
    } catch (e) {
        failed++;
        console.log(`FAIL ${name}: ${e.message}`);
    }
}

// [request, exact reply] pairs, run in order on keys of the suite's own.
function cases(p) {
    return [
        [["CL.THROTTLE", `${p}:gcra`, "15", "30", "60"], [0, 16, 15, -1, 2]],
        [["CL.THROTTLE", `${p}:gcra`, "15", "30", "60"], [0, 16, 14, -1, 4]],
        [["CL.THROTTLE", `${p}:gcra`, "15", "30", "60", "0", "PEEK", "MS"], [0, 16, 14, -1, 4000]],
        [["RL.FIXED", `${p}:fixed`, "2000", "86400", "COST", "350"], [0, 2000, 1650, -1, 86400]],
        [["RL.FIXED", `${p}:fixed`, "2000", "86400", "COST", "2000"], [1, 2000, 1650, 86400, 86400]],
        [["RL.FIXED", `${p}:aligned`, "10", "60", "ALIGN", "MS"], [0, 10, 9, -1, 60000]],
        [["RL.SLIDING", `${p}:sliding`, "10", "60"], [0, 10, 9, -1, 120]],
        [["RL.SLIDING", `${p}:sliding`, "10", "60", "COST", "3", "PEEK"], [0, 10, 6, -1, 120]],
        [["RL.LOG", `${p}:log`, "3", "60", "META", "alice"], [0, 3, 2, -1, 60]],
        [["RL.LOG", `${p}:log`, "3", "60", "COST", "2"], [0, 3, 0, -1, 60]],
        [["RL.LOG", `${p}:log`, "3", "60"], [1, 3, 0, 60, 60]],
        [["RL.ENTRIES", `${p}:log`], [[nowMs, 2, null], [nowMs, 1, "alice"]]],
        [["RL.ENTRIES", `${p}:log`, "COUNT", "1"], [[nowMs, 2, null]]],
        [["RL.ENTRIES", `${p}:none`], []],
        [["RL.TIERS", `${p}:tiers`, "10", "1", "20", "10"], [0, 10, 9, -1, 10]],
        [["RL.TIERS", `${p}:tiers`, "10", "1", "20", "10", "COST", "9", "MS"], [0, 10, 0, -1, 10000]],
        [["RL.TIERS", `${p}:tiers`, "10", "1", "20", "10"], [1, 10, 0, 1, 10]],
        // Redis's GCRA (ioredis shipped no gcra() method: it was removed
        // before a release, so applications send it as a plain command).
        [["GCRA", `${p}:rgcra`, "5", "10", "60"], [0, 6, 5, -1, 6]],
        [["GCRA", `${p}:rgcra`, "5", "10", "60", "TOKENS", "5"], [0, 6, 0, -1, 36]],
        [["GCRA", `${p}:rgcra`, "5", "10", "60"], [1, 6, 0, 6, 36]],
        [["GCRA", `${p}:fresh`, "5", "1", "60", "TOKENS", "10"], [1, 6, 6, -1, 0]],
    ];
}

// [request, exact error text] pairs.
function errors(p) {
    return [
        [["CL.THROTTLE", `${p}:gcra`, "1", "0", "1"],
         "Cell error: Store error: Zero rates are not supported"],
        [["CL.THROTTLE", `${p}:k`, "1"],
         "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"],
        [["RL.FIXED", `${p}:gcra`, "1", "1"],
         "WRONGTYPE Operation against a key holding the wrong kind of value"],
        [["RL.FIXED", `${p}:x`, "1", "1", "BOGUS"], "ERR syntax error"],
        [["RL.SLIDING", `${p}:x`, "ten", "60"], "ERR value is not an integer or out of range"],
        [["RL.LOG", `${p}:x`, "0", "60"], "ERR limit and window must be positive"],
        [["RL.ENTRIES", `${p}:log`, "COUNT"], "ERR syntax error"],
        [["RL.NOPE", "x"], "ERR unknown command 'RL.NOPE', with args beginning with: 'x' "],
        [["GCRA", `${p}:x`, "1", "1", "0"], "ERR period must be > 0 and < 1e12"],
        [["GCRA", `${p}:gcra`, "1", "1", "1"],
         "WRONGTYPE Operation against a key holding the wrong kind of value"],
    ];
}

// Three CL.THROTTLE in one MULTI/EXEC: decided together, in order.
function txWant() {
    return [[0, 2, 1, -1, 60], [0, 2, 0, -1, 120], [1, 2, 0, 60, 120]];
}

async function suite(label, prefix, call, resp, libName, tx) {
    await check(`${label} MULTI/EXEC of three CL.THROTTLE`, async () =>
        assert.deepEqual(await tx(Array(3).fill(["CL.THROTTLE", `${prefix}:tx`, "1", "1", "60"])),
                         txWant()));
    for (const [req, want] of cases(prefix)) {
        await check(`${label} ${req.join(" ")}`, async () =>
            assert.deepEqual(await call(...req), want));
    }
    for (const [req, text] of errors(prefix)) {
        await check(`${label} ${req.join(" ")} (error)`, async () =>
            assert.rejects(call(...req), (e) => {
                assert.equal(e.message, text);
                return true;
            }));
    }
    await check(`${label} negotiated RESP${resp}`, async () => {
        const info = String(await call("CLIENT", "INFO"));
        assert.match(info, new RegExp(` resp=${resp} `));
        assert.match(info, new RegExp(` lib-name=${libName} `));
    });
}

async function ioredis(label, prefix, options, resp) {
    const io = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, ...options });
    io.on("error", () => {});
    // ioredis answers a transaction as [[error, reply], ...].
    const tx = async (reqs) => {
        const m = io.multi();
        for (const r of reqs) m.call(...r);
        return (await m.exec()).map(([err, reply]) => { if (err) throw err; return reply; });
    };
    await suite(label, prefix, (...args) => io.call(...args), resp, "ioredis", tx);
    await check(`${label} WATCH: a write by another client makes EXEC null`, async () => {
        const other = new Redis({ port, host: "127.0.0.1" });
        await io.watch(`${prefix}:w`);
        await other.call("CL.THROTTLE", `${prefix}:w`, "5", "1", "60");
        assert.equal(await io.multi().call("CL.THROTTLE", `${prefix}:w`, "5", "1", "60").exec(), null);
        other.disconnect();
    });
    await check(`${label} INCREX through ioredis's increx()`, async () => {
        assert.deepEqual(await io.increx(`${prefix}:cnt`, "BYINT", 5, "UBOUND", 10), [5, 5]);
        assert.deepEqual(await io.increx(`${prefix}:cnt`, "BYINT", 6, "UBOUND", 10), [5, 0]);
        assert.deepEqual(await io.increx(`${prefix}:cnt`, "BYINT", 6, "UBOUND", 10, "SATURATE"),
                         [10, 5]);
    });
    io.disconnect();
}

async function nodeRedis(label, prefix, options, resp) {
    const nr = createClient({ socket: { port, host: "127.0.0.1" }, ...options });
    nr.on("error", () => {});
    await nr.connect();
    const tx = async (reqs) => {
        const m = nr.multi();
        for (const r of reqs) m.addCommand(r);
        return await m.exec();
    };
    await suite(label, prefix, (...args) => nr.sendCommand(args), resp, "node-redis", tx);
    await check(`${label} WATCH: a write by another client aborts EXEC`, async () => {
        const other = createClient({ socket: { port, host: "127.0.0.1" } });
        await other.connect();
        await nr.watch(`${prefix}:w`);
        await other.sendCommand(["CL.THROTTLE", `${prefix}:w`, "5", "1", "60"]);
        await assert.rejects(nr.multi().addCommand(["CL.THROTTLE", `${prefix}:w`, "5", "1", "60"]).exec(),
                             /watched keys has been changed/);
        await other.quit();
    });
    await check(`${label} INCREX through node-redis's increx()/incrExByFloat()`, async () => {
        const key = `${prefix}:cnt`;
        assert.deepEqual(await nr.increx(key, { by: 5, upperBound: 10,
                                               expiration: { type: "EX", value: 60 } }), [5, 5]);
        assert.deepEqual(await nr.increx(key, { by: 6, upperBound: 10 }), [5, 0]);
        assert.deepEqual(await nr.increx(key, { by: 6, upperBound: 10, saturate: true }), [10, 5]);
        assert.equal(await nr.ttl(key), 60);
        const f = await nr.incrExByFloat(`${prefix}:f`, 2.5);
        assert.deepEqual(f, resp === 3 ? [2.5, 2.5] : ["2.5", "2.5"]);
    });
    await nr.quit();
}

// Defaults first: both clients open with HELLO 3.
await ioredis("ioredis default", "io3", {}, 3);
await ioredis("ioredis protocol 2", "io2", { protocol: 2 }, 2);
await nodeRedis("node-redis default", "nr", {}, 3);
await nodeRedis("node-redis RESP 3", "nr3", { RESP: 3 }, 3);
await nodeRedis("node-redis RESP 2", "nr2", { RESP: 2 }, 2);

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
