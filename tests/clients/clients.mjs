// Runs CL.THROTTLE and every RL.* command through ioredis and node-redis
// (each in its default protocol) against cellgate at 127.0.0.1:<port>,
// checking exact replies and errors. Prints "N passed, M failed".
import assert from "node:assert/strict";
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
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

async function suite(label, call) {
    await check(`${label} CL.THROTTLE`, async () =>
        assert.deepEqual(await call("CL.THROTTLE", `${label}:gcra`, "15", "30", "60"),
                         [0, 16, 15, -1, 2]));
    await check(`${label} RL.FIXED`, async () =>
        assert.deepEqual(await call("RL.FIXED", `${label}:fixed`, "2000", "86400", "COST", "350"),
                         [0, 2000, 1650, -1, 86400]));
    await check(`${label} RL.SLIDING`, async () => {
        const r = await call("RL.SLIDING", `${label}:sliding`, "10", "60");
        assert.deepEqual(r.slice(0, 4), [0, 10, 9, -1]);
    });
    await check(`${label} RL.LOG + RL.ENTRIES`, async () => {
        assert.deepEqual(await call("RL.LOG", `${label}:log`, "3", "60", "META", "alice"),
                         [0, 3, 2, -1, 60]);
        const entries = await call("RL.ENTRIES", `${label}:log`);
        assert.equal(entries.length, 1);
        assert.equal(entries[0][1], 1);
        assert.equal(String(entries[0][2]), "alice");
    });
    await check(`${label} RL.TIERS`, async () =>
        assert.deepEqual(await call("RL.TIERS", `${label}:tiers`, "10", "1", "20", "10"),
                         [0, 10, 9, -1, 10]));
    await check(`${label} zero rate error`, async () =>
        assert.rejects(call("CL.THROTTLE", `${label}:gcra`, "1", "0", "1"),
                       /Cell error: Store error: Zero rates are not supported/));
    await check(`${label} WRONGTYPE`, async () =>
        assert.rejects(call("RL.FIXED", `${label}:gcra`, "1", "1"), /WRONGTYPE/));
    await check(`${label} syntax error`, async () =>
        assert.rejects(call("RL.FIXED", `${label}:x`, "1", "1", "BOGUS"), /syntax error/));
}

const io = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
await suite("ioredis", (...args) => io.call(...args));
io.disconnect();

const nr = createClient({ socket: { port, host: "127.0.0.1" } });
nr.on("error", () => {});
await nr.connect();
await suite("node-redis", (...args) => nr.sendCommand(args));
await nr.quit();

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
