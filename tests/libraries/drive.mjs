// Runs one rate-limiting library, unchanged, against a Redis-protocol server
// at 127.0.0.1:<port> and prints what its user would see as one JSON line:
// the decisions (allowed or not, HTTP statuses, the counts and headers the
// library reports), with every time-dependent figure reduced to a check
// that it lies in its range, so the same line comes out of redis-server and
// of cellgate. tests/integration/test_libraries.py runs each scenario
// against both and compares the line with the decisions it writes down.
//
//     node drive.mjs <scenario> <port>
//
// Scenarios: rlf-ioredis, rlf-node-redis, rlf-valkey-glide, express, fastify, nest, semaphore,
// bull, bee-queue, groupmq, redis-bucket. Each uses keys of its own and at most a
// minute-long window (the test takes a few seconds, so no window ends
// inside it); every wait is bounded. The queues' scenarios print the order
// in which their workers took the jobs and each job's outcome.
// Midway, each that keeps scripts by SHA1 meets a SCRIPT FLUSH, so its
// NOSCRIPT fallback runs too.
import http from "node:http";
import Redis from "ioredis";
import { createClient } from "redis";

const [scenario, portArg] = process.argv.slice(2);
const port = Number(portArg);
const HOST = "127.0.0.1";

// ---- helpers -----------------------------------------------------------

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function ioredis() {
    // No reconnect loop, no offline queue: a server that goes away fails
    // the scenario at once instead of hanging it.
    return new Redis({ host: HOST, port, maxRetriesPerRequest: 0,
                       retryStrategy: () => null, enableOfflineQueue: false,
                       lazyConnect: true });
}

async function nodeRedis() {
    const c = createClient({ socket: { host: HOST, port, reconnectStrategy: false,
                                       connectTimeout: 5000 } });
    c.on("error", () => {});
    await c.connect();
    return c;
}

// A separate connection for what the scenario does beside the library
// (SCRIPT FLUSH): plain ioredis, RESP2, no scripts of its own.
async function admin() {
    const c = ioredis();
    await c.connect();
    return c;
}

// 0 < value <= max: a TTL or reset just set to max, run down a little.
const within = (v, max, slack = 5000) => Number.isFinite(v) && v > max - slack && v <= max;

// One HTTP GET; resolves with the status and the (lower-case) headers.
function get(appPort, path, headers = {}) {
    return new Promise((resolve, reject) => {
        const req = http.get({ host: HOST, port: appPort, path, headers, agent: false,
                               timeout: 10000 }, (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode, headers: res.headers }));
        });
        req.on("timeout", () => req.destroy(new Error(`GET ${path} timed out`)));
        req.on("error", reject);
    });
}

// The X-RateLimit-* headers every framework here sends (fastify and Nest
// name them the same), the reset and Retry-After only checked for range.
function rateHeaders(r, windowS) {
    const h = r.headers;
    const out = [r.status, h["x-ratelimit-limit"], h["x-ratelimit-remaining"]];
    if (h["x-ratelimit-reset"] !== undefined) {
        // Seconds from now (fastify, Nest) or a Unix time (express-rate-limit).
        let reset = Number(h["x-ratelimit-reset"]);
        if (reset > 1e9) reset -= Math.ceil(Date.now() / 1000);
        out.push(within(reset, windowS, 5) ? "reset ok" : `reset ${h["x-ratelimit-reset"]}`);
    }
    if (r.status === 429)
        out.push(h["retry-after"] === undefined ? "no retry-after"
                 : within(Number(h["retry-after"]), windowS, 5) ? "retry-after ok" : `retry-after ${h["retry-after"]}`);
    return out;
}

// ---- rate-limiter-flexible ----------------------------------------------

// What RateLimiterRes says, msBeforeNext checked against the window.
function rlfRes(res, windowMs) {
    if (res === null) return null;
    if (res instanceof Error) return `error: ${res.message}`;
    return [res.consumedPoints, res.remainingPoints, res.isFirstInDuration,
            within(res.msBeforeNext, windowMs) ? "ttl ok" : `ttl ${res.msBeforeNext}`];
}

async function consume(limiter, key, windowMs) {
    try {
        return ["allowed", ...rlfRes(await limiter.consume(key), windowMs)];
    } catch (rej) {
        return rej instanceof Error ? [`error: ${rej.message}`] : ["rejected", ...rlfRes(rej, windowMs)];
    }
}

async function rateLimiterFlexible(client, adminClient) {
    const { RateLimiterRedis } = await import("rate-limiter-flexible");
    const opts = { storeClient: client, keyPrefix: "rlf" };
    if (!(client instanceof Redis)) opts.useRedisPackage = true;
    const limiter = new RateLimiterRedis({ ...opts, points: 5, duration: 60 });
    const out = {};
    out.consume = [];
    for (let i = 0; i < 7; i++) out.consume.push(await consume(limiter, "alice", 60000));
    out.get = rlfRes(await limiter.get("alice"), 60000);
    await adminClient.script("FLUSH");
    out.after_flush = await consume(limiter, "alice", 60000);
    out.delete = await limiter.delete("alice");
    out.get_deleted = rlfRes(await limiter.get("alice"), 60000);
    out.delete_again = await limiter.delete("alice");
    out.consume_after_delete = await consume(limiter, "alice", 60000);
    // block(): SET EX in a MULTI with PTTL; consumes are then refused.
    out.block = rlfRes(await limiter.block("bob", 30), 30000);
    out.consume_blocked = await consume(limiter, "bob", 30000);
    // blockDuration: going over the limit blocks the key for 120 s.
    const blocking = new RateLimiterRedis({ ...opts, keyPrefix: "rlfb", points: 2,
                                            duration: 60, blockDuration: 120 });
    out.block_duration = [];
    for (let i = 0; i < 4; i++) out.block_duration.push(await consume(blocking, "carol", i < 2 ? 60000 : 120000));
    out.block_duration_get = rlfRes(await blocking.get("carol"), 120000);
    // Points of more than one at a time.
    const heavy = new RateLimiterRedis({ ...opts, keyPrefix: "rlfh", points: 10, duration: 60 });
    out.consume_points = [];
    for (const n of [4, 4, 4]) {
        try {
            out.consume_points.push(["allowed", ...rlfRes(await heavy.consume("dave", n), 60000)]);
        } catch (rej) {
            out.consume_points.push(rej instanceof Error ? [`error: ${rej.message}`]
                                    : ["rejected", ...rlfRes(rej, 60000)]);
        }
    }
    return out;
}

async function rlfIoredis() {
    const client = ioredis();
    await client.connect();
    const a = await admin();
    try {
        return await rateLimiterFlexible(client, a);
    } finally {
        client.disconnect();
        a.disconnect();
    }
}

async function rlfNodeRedis() {
    const client = await nodeRedis();
    const a = await admin();
    try {
        return await rateLimiterFlexible(client, a);
    } finally {
        client.destroy();
        a.disconnect();
    }
}

// ---- rate-limiter-flexible on Valkey GLIDE: functions ---------------------

// RateLimiterValkeyGlide keeps its two scripts as function libraries
// (FUNCTION LOAD REPLACE, FCALL, FUNCTION DELETE on close) and talks through
// @valkey/valkey-glide's client (native, RESP3). It writes them for Valkey 8,
// whose scripts also answer to the name `server`; Redis 7.0.15 knows only
// `redis` ("Script attempted to access nonexistent global variable 'server'"
// from FUNCTION LOAD). No library found on npm or in Debian loads functions
// written for Redis 7.0 (docs/compat.md lists where we looked), so this
// one's libraries are ported: the same code, `server.call` and
// `server.register_function` spelt `redis.`, done on the way to FUNCTION
// LOAD. The class and the client run unchanged.
function redis70Functions(glide) {
    return new Proxy(glide, {
        get(target, prop) {
            if (prop === "functionLoad") {
                return (code, opts) => target.functionLoad(Buffer.from(String(code)
                    .replace(/\bserver\.(call|register_function)\b/g, "redis.$1")), opts);
            }
            const v = target[prop];
            return typeof v === "function" ? v.bind(target) : v;
        },
    });
}

async function settled(promise, windowMs) {
    try {
        return ["allowed", ...rlfRes(await promise, windowMs)];
    } catch (rej) {
        return rej instanceof Error ? [`error: ${rej.message}`] : ["rejected", ...rlfRes(rej, windowMs)];
    }
}

// FUNCTION LIST as [library, [function, ...]] pairs, sorted.
async function functionNames(a) {
    const libs = await a.call("FUNCTION", "LIST");
    return libs.map((lib) => {
        const name = lib[lib.indexOf("library_name") + 1];
        const fns = lib[lib.indexOf("functions") + 1].map((f) => f[f.indexOf("name") + 1]);
        return [name, fns.sort()];
    }).sort();
}

// close() deletes the limiter's libraries (FUNCTION DELETE), then sets
// insuranceLimiter to null, which the class's own setter refuses: it
// rejects after the deletes. What it says, and the libraries left.
async function closed(limiter, a) {
    let said = "ok";
    try {
        await limiter.close();
    } catch (e) {
        said = `error: ${e.message}`;
    }
    return [said, await functionNames(a)];
}

// What a limiter with duration 0 says: msBeforeNext is -1 (no TTL).
async function consumeForever(limiter, key) {
    try {
        const r = await limiter.consume(key);
        return ["allowed", r.consumedPoints, r.remainingPoints, r.msBeforeNext];
    } catch (rej) {
        return rej instanceof Error ? [`error: ${rej.message}`]
            : ["rejected", rej.consumedPoints, rej.remainingPoints, rej.msBeforeNext];
    }
}

async function valkeyGlideLimiter(client, a) {
    const { RateLimiterValkeyGlide } = await import("rate-limiter-flexible");
    const make = (keyPrefix, points, duration, lib) => new RateLimiterValkeyGlide(
        { storeClient: client, keyPrefix, points, duration, customFunctionLibName: lib });
    const out = {};
    const limiter = make("rlg", 5, 60);
    out.consume = [];
    for (let i = 0; i < 7; i++) out.consume.push(await settled(limiter.consume("alice"), 60000));
    out.get = rlfRes(await limiter.get("alice"), 60000);
    out.functions = await functionNames(a);
    out.penalty = rlfRes(await limiter.penalty("alice", 2), 60000);
    out.reward = rlfRes(await limiter.reward("alice", 4), 60000);
    out.delete = await limiter.delete("alice");
    out.delete_again = await limiter.delete("alice");
    // A key no longer there: getValue answers nil, get() null.
    try {
        out.get_missing = rlfRes(await limiter.get("alice"), 60000);
    } catch (e) {
        out.get_missing = `error: ${e.message}`;
    }
    out.block = rlfRes(await limiter.block("bob", 30), 30000);
    out.consume_blocked = await settled(limiter.consume("bob"), 30000);
    // FUNCTION FLUSH behind its back: the class goes on calling FCALL.
    await a.call("FUNCTION", "FLUSH");
    out.after_flush = await settled(limiter.consume("bob"), 30000);
    // A new limiter loads both libraries again (REPLACE), its own under its name.
    const heavy = make("rlgh", 10, 60, "rlg_heavy");
    out.consume_points = [];
    for (const n of [4, 4, 4]) out.consume_points.push(await settled(heavy.consume("dave", n), 60000));
    out.functions_heavy = await functionNames(a);
    // Function names are one namespace across libraries: a third library
    // registers `consume` again.
    out.clash = await settled(make("rlgo", 2, 60, "rlg_other").consume("erin"), 60000);
    out.close = await closed(heavy, a);
    // duration 0: the counter never expires.
    const forever = make("rlgf", 2, 0, "rlg_forever");
    out.forever = [];
    for (let i = 0; i < 3; i++) out.forever.push(await consumeForever(forever, "erin"));
    out.functions_forever = await functionNames(a);
    out.close_forever = await closed(forever, a);
    return out;
}

async function rlfValkeyGlide() {
    const { GlideClient, Logger } = await import("@valkey/valkey-glide");
    Logger.init("off");     // its core logs every error reply on stdout
    const glide = await GlideClient.createClient({ addresses: [{ host: HOST, port }],
                                                   requestTimeout: 5000 });
    const a = await admin();
    try {
        return await valkeyGlideLimiter(redis70Functions(glide), a);
    } finally {
        glide.close();
        a.disconnect();
    }
}

// ---- express-rate-limit + rate-limit-redis -------------------------------

function listen(server) {
    return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, HOST, () => resolve(server.address().port));
    });
}

async function expressScenario() {
    const { default: express } = await import("express");
    const { rateLimit } = await import("express-rate-limit");
    const { RedisStore } = await import("rate-limit-redis");
    const client = await nodeRedis();
    const a = await admin();
    const limiter = rateLimit({
        windowMs: 60000,
        limit: 5,
        standardHeaders: "draft-7",
        legacyHeaders: true,
        // 500s are taken back (DECR); a 429 stays counted.
        skipFailedRequests: true,
        requestWasSuccessful: (req, res) => res.statusCode < 500,
        keyGenerator: (req) => req.get("x-client") || "anon",
        store: new RedisStore({ sendCommand: (...args) => client.sendCommand(args) }),
    });
    const app = express();
    app.use(limiter);
    app.get("/ok", (req, res) => res.send("ok"));
    app.get("/fail", (req, res) => res.status(500).send("failed"));
    const server = http.createServer(app);
    const appPort = await listen(server);
    const out = {};
    // draft-7's RateLimit header: limit=5, remaining=n, reset=s.
    const seen = (r) => {
        const std = /^limit=(\d+), remaining=(\d+), reset=(\d+)$/.exec(r.headers["ratelimit"] || "");
        const row = rateHeaders(r, 60);
        row.push(std ? `limit=${std[1]} remaining=${std[2]} reset ${within(Number(std[3]), 60, 5) ? "ok" : std[3]}`
                     : `RateLimit ${r.headers["ratelimit"]}`);
        row.push(r.headers["ratelimit-policy"] || "no policy");
        return row;
    };
    try {
        out.alice = [];
        for (let i = 0; i < 7; i++) out.alice.push(seen(await get(appPort, "/ok", { "x-client": "alice" })));
        // NOSCRIPT: the store reloads the script (SCRIPT LOAD) and retries.
        await a.script("FLUSH");
        const info = await limiter.getKey("alice");
        out.alice_get = info ? [info.totalHits, within(info.resetTime - Date.now(), 60000) ? "reset ok" : "reset off"] : null;
        await limiter.resetKey("alice");
        out.alice_after_reset = seen(await get(appPort, "/ok", { "x-client": "alice" }));
        // Failed requests are counted, then taken back (DECR) once sent.
        out.bob_fail = [];
        for (let i = 0; i < 3; i++) out.bob_fail.push((await get(appPort, "/fail", { "x-client": "bob" })).status);
        let hits = -1;
        for (let i = 0; i < 200; i++) {
            hits = (await limiter.getKey("bob")).totalHits;
            if (hits === 0) break;
            await sleep(10);
        }
        out.bob_hits_after_fail = hits;
        out.bob_ok = seen(await get(appPort, "/ok", { "x-client": "bob" }));
        out.unknown_get = (await limiter.getKey("nobody")) ?? null;
        if (out.unknown_get) out.unknown_get = out.unknown_get.totalHits;
    } finally {
        server.close();
        client.destroy();
        a.disconnect();
    }
    return out;
}

// ---- @fastify/rate-limit with its Redis store ------------------------------

async function fastifyScenario() {
    const { default: Fastify } = await import("fastify");
    const { default: rateLimit } = await import("@fastify/rate-limit");
    const client = ioredis();
    await client.connect();
    const a = await admin();
    const app = Fastify({ logger: false, abortOnError: false });
    await app.register(rateLimit, {
        max: 5,
        timeWindow: 60000,
        redis: client,
        keyGenerator: (req) => req.headers["x-client"] || "anon",
    });
    app.get("/ok", async () => "ok");
    // Exponential backoff: each refusal past the limit doubles the window.
    app.get("/backoff", { config: { rateLimit: { max: 2, timeWindow: 60000, exponentialBackoff: true } } },
            async () => "ok");
    await app.listen({ port: 0, host: HOST });
    const appPort = app.server.address().port;
    const out = {};
    try {
        out.alice = [];
        for (let i = 0; i < 7; i++) out.alice.push(rateHeaders(await get(appPort, "/ok", { "x-client": "alice" }), 60));
        await a.script("FLUSH");
        out.alice_after_flush = rateHeaders(await get(appPort, "/ok", { "x-client": "alice" }), 60);
        out.bob = rateHeaders(await get(appPort, "/ok", { "x-client": "bob" }), 60);
        out.backoff = [];
        for (let i = 0; i < 5; i++) {
            const r = await get(appPort, "/backoff", { "x-client": "carol" });
            out.backoff.push([r.status, r.headers["x-ratelimit-remaining"], r.headers["retry-after"] ?? null]);
        }
    } finally {
        await app.close();
        client.disconnect();
        a.disconnect();
    }
    return out;
}

// ---- NestJS: @nestjs/throttler with @nest-lab/throttler-storage-redis -----

async function nestScenario() {
    await import("reflect-metadata");
    const common = await import("@nestjs/common");
    const { NestFactory, APP_GUARD } = await import("@nestjs/core");
    const { ThrottlerModule, ThrottlerGuard } = await import("@nestjs/throttler");
    const { ThrottlerStorageRedisService } = await import("@nest-lab/throttler-storage-redis");
    const client = ioredis();
    await client.connect();
    const storage = new ThrottlerStorageRedisService(client);
    // Plain JavaScript: the decorators applied by hand, as TypeScript would.
    class HelloController {
        hello() { return "hello"; }
    }
    common.Controller()(HelloController);
    const d = Object.getOwnPropertyDescriptor(HelloController.prototype, "hello");
    common.Get("hello")(HelloController.prototype, "hello", d);
    Object.defineProperty(HelloController.prototype, "hello", d);
    class AppModule {}
    common.Module({
        imports: [ThrottlerModule.forRoot({
            throttlers: [{ ttl: 60000, limit: 5, blockDuration: 60000 }],
            storage,
            getTracker: (req) => req.headers["x-client"] || "anon",
        })],
        controllers: [HelloController],
        providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })(AppModule);
    const app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
    await app.listen(0, HOST);
    const appPort = app.getHttpServer().address().port;
    const out = {};
    try {
        out.alice = [];
        for (let i = 0; i < 7; i++) out.alice.push(rateHeaders(await get(appPort, "/hello", { "x-client": "alice" }), 60));
        out.bob = rateHeaders(await get(appPort, "/hello", { "x-client": "bob" }), 60);
        // The storage driven directly through its documented API too.
        out.storage = [];
        for (let i = 0; i < 3; i++) {
            const r = await storage.increment("direct", 60000, 2, 30000, "default");
            out.storage.push([r.totalHits, r.timeToExpire, r.isBlocked, r.timeToBlockExpire]);
        }
    } finally {
        await app.close();
        client.disconnect();
    }
    return out;
}

// ---- redis-semaphore --------------------------------------------------------

async function semaphoreScenario() {
    const { Semaphore, Mutex } = await import("redis-semaphore");
    const clients = [];
    const connect = async () => {
        const c = ioredis();
        await c.connect();
        clients.push(c);
        return c;
    };
    const client = await connect();
    const a = await admin();
    // No automatic refresh (refreshInterval 0): the scenario refreshes
    // itself, through acquiredExternally (tryAcquire then runs refresh).
    const once = { lockTimeout: 60000, acquireAttemptsLimit: 1, refreshInterval: 0 };
    const out = {};
    try {
        const s1 = new Semaphore(client, "pool", 2, once);
        const s2 = new Semaphore(client, "pool", 2, once);
        const s3 = new Semaphore(client, "pool", 2, once);
        out.acquire = [await s1.tryAcquire(), await s2.tryAcquire(), await s3.tryAcquire()];
        out.holders = await client.zcard("semaphore:pool");
        const refresh = (id) => new Semaphore(client, "pool", 2,
                                              { ...once, identifier: id, acquiredExternally: true });
        out.refresh = [await refresh(s1.identifier).tryAcquire(), await refresh("stranger").tryAcquire()];
        // A waiter polls (every 20 ms, at most 10 s) until a holder leaves.
        const waiter = new Semaphore(client, "pool", 2, { lockTimeout: 60000, acquireTimeout: 10000,
                                                          retryInterval: 20, refreshInterval: 0 });
        const waiting = waiter.acquire().then(() => "acquired", (e) => `error: ${e.message}`);
        await sleep(100);
        out.waiter_before_release = waiter.isAcquired;
        await s1.release();
        out.waiter = await waiting;
        await a.script("FLUSH");
        out.after_flush = [await s3.tryAcquire(), await refresh(s2.identifier).tryAcquire()];
        await s2.release();
        await waiter.release();
        out.holders_after_release = await client.zcard("semaphore:pool");
        // Six contenders on six connections at once: two get in.
        const racers = [];
        for (let i = 0; i < 6; i++) racers.push(new Semaphore(await connect(), "race", 2, once));
        const got = await Promise.all(racers.map((s) => s.tryAcquire()));
        out.race = got.filter(Boolean).length;
        out.race_holders = await client.zcard("semaphore:race");
        // Mutex: SET NX PX, refresh and release by compare-then-act scripts.
        const m1 = new Mutex(client, "door", once);
        const m2 = new Mutex(client, "door", once);
        out.mutex = [await m1.tryAcquire(), await m2.tryAcquire()];
        out.mutex_refresh = [
            await new Mutex(client, "door", { ...once, identifier: m1.identifier, acquiredExternally: true }).tryAcquire(),
            await new Mutex(client, "door", { ...once, identifier: "stranger", acquiredExternally: true }).tryAcquire(),
        ];
        out.mutex_owner_is_m1 = (await client.get("mutex:door")) === m1.identifier;
        // A stranger's release leaves the lock alone.
        await new Mutex(client, "door", { ...once, identifier: "stranger", acquiredExternally: true }).release();
        out.mutex_after_stranger_release = (await client.get("mutex:door")) === m1.identifier;
        await m1.release();
        out.mutex_after_release = [await client.exists("mutex:door"), await m2.tryAcquire()];
        await m2.release();
        out.mutex_left = await client.exists("mutex:door");
    } finally {
        for (const c of clients) c.disconnect();
        a.disconnect();
    }
    return out;
}

// ---- the job queues: bull, bee-queue, groupmq --------------------------------

// Polls check() every 20 ms until it holds; throws after ms (a queue that
// never delivers fails the scenario with what it was waiting for).
async function until(what, check, ms = 15000) {
    for (let waited = 0; ; waited += 20) {
        if (await check()) return;
        if (waited >= ms) throw new Error(`timed out waiting for ${what}`);
        await sleep(20);
    }
}

// A close that may wait on a blocked connection, bounded.
function bounded(what, promise, ms = 10000) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Bull (v4): a queue with a rate limiter (3 jobs a minute) takes three
// of five jobs and moves the rest to its delayed set; a second queue's
// worker, blocked in BRPOPLPUSH on the empty queue, is handed a job the
// moment it is added, then drains a paused queue by priority, with a job
// that fails both its attempts. Its scripts keep options with cmsgpack
// and use sets and RPOPLPUSH.
async function bullScenario() {
    const { default: Bull } = await import("bull");
    const redis = { host: HOST, port, maxRetriesPerRequest: null, enableReadyCheck: false,
                    retryStrategy: () => null };
    const base = { redis, prefix: "bull" };
    const out = {};
    const closing = [];
    try {
        const limited = new Bull("limited", { ...base, limiter: { max: 3, duration: 60000 } });
        closing.push(limited);
        for (const name of ["a", "b", "c", "d", "e"]) await limited.add({ name });
        const done = [];
        limited.process(async (job) => { done.push(job.data.name); return job.data.name.toUpperCase(); });
        await until("three limited jobs", () => done.length >= 3);
        await until("the rest delayed", async () => (await limited.getJobCounts()).delayed === 2);
        await sleep(300);
        out.limited_order = [...done];
        out.limited_counts = await limited.getJobCounts();

        const work = new Bull("work", base);
        closing.push(work);
        const seen = [];
        work.process(async (job) => {
            seen.push(`${job.data.name}#${job.attemptsMade + 1}`);
            if (job.data.name === "bad") throw new Error("bad job");
            return job.data.n * 10;
        });
        await work.isReady();
        await sleep(300);       // the worker is blocked in BRPOPLPUSH
        const first = await work.add({ name: "first", n: 1 });
        await until("the first job", async () => (await first.getState()) === "completed");
        await work.pause();
        const jobs = [await work.add({ name: "plain", n: 2 }),
                      await work.add({ name: "low", n: 3 }, { priority: 10 }),
                      await work.add({ name: "high", n: 4 }, { priority: 1 }),
                      await work.add({ name: "bad", n: 5 }, { attempts: 2 })];
        out.paused_counts = await work.getJobCounts();
        await work.resume();
        await until("the paused jobs", async () => {
            const c = await work.getJobCounts();
            return c.completed + c.failed === 5;
        });
        out.order = seen;
        out.results = [];
        for (const j of [first, ...jobs]) {
            const job = await work.getJob(j.id);
            out.results.push([job.data.name, await job.getState(), job.returnvalue ?? null,
                              job.failedReason ?? null, job.attemptsMade]);
        }
        out.counts = await work.getJobCounts();
    } finally {
        for (const q of closing.reverse()) await bounded("closing", q.close()).catch(() => {});
    }
    return out;
}

// bee-queue: jobs saved before the worker starts are taken in order
// (BRPOPLPUSH waiting -> active), a job saved while it waits is handed
// over at once, a job that throws is retried once then failed; outcomes
// live in the succeeded and failed sets (SADD, SCARD, SSCAN, SISMEMBER).
async function beeQueueScenario() {
    const { default: Queue } = await import("bee-queue");
    const q = new Queue("bq", { redis: { host: HOST, port }, prefix: "bq", getEvents: false,
                                 stallInterval: 60000, removeOnSuccess: false });
    const out = {};
    try {
        await q.ready();
        const seen = [];
        const save = (data, retries = 0) => q.createJob(data).retries(retries).save();
        const early = [await save({ name: "a", n: 1 }), await save({ name: "b", n: 2 }),
                       await save({ name: "bad", n: 3 }, 1), await save({ name: "c", n: 4 })];
        out.health_before = await q.checkHealth();
        q.process(1, async (job) => {
            seen.push(job.data.name);
            if (job.data.name === "bad") throw new Error("bad job");
            return job.data.n * 10;
        });
        await until("the early jobs", async () => {
            const h = await q.checkHealth();
            return h.succeeded + h.failed === 4;
        });
        await sleep(300);       // the worker is blocked in BRPOPLPUSH
        const late = await save({ name: "late", n: 5 });
        await until("the late job", async () => (await q.checkHealth()).succeeded === 4);
        out.order = seen;
        out.results = [];
        for (const j of [...early, late]) {
            const job = await q.getJob(j.id);
            out.results.push([job.data.name, await job.isInSet("succeeded") ? "succeeded"
                              : await job.isInSet("failed") ? "failed" : "neither"]);
        }
        out.succeeded = (await q.getJobs("succeeded", { size: 10 })).map((j) => j.data.name).sort();
        out.failed = (await q.getJobs("failed", { size: 10 })).map((j) => j.data.name);
        out.stalled = await q.checkStalledJobs();
        await q.removeJob(late.id);
        out.health_after = await q.checkHealth();
    } finally {
        await bounded("closing", q.close(5000)).catch(() => {});
    }
    return out;
}

// groupmq: per-group FIFO. Jobs are ordered by orderMs within a group,
// and the groups by the orderMs of their heads (a sorted set of ready
// groups); a worker waits for a ready group in BZPOPMIN, is handed a job
// added while it waits, and a job failing both its attempts ends failed.
async function groupmqScenario() {
    const { Queue, Worker } = await import("groupmq");
    const client = ioredis();
    await client.connect();
    const queue = new Queue({ redis: client, namespace: "gmq", keepCompleted: 10, keepFailed: 10,
                              jobTimeoutMs: 30000 });
    const seen = [];
    const out = {};
    let worker = null;
    try {
        const add = (groupId, name, orderMs, maxAttempts = 1) =>
            queue.add({ groupId, data: { name }, orderMs, maxAttempts, jobId: name });
        await add("u1", "u1-a", 1000);
        await add("u1", "u1-b", 2000);
        await add("u2", "u2-a", 1500);
        await add("u2", "u2-bad", 1600, 2);
        out.counts_before = await queue.getJobCounts();
        worker = new Worker({ queue, blockingTimeoutSec: 1, backoff: () => 0, enableCleanup: false,
                              handler: async (job) => {
                                  seen.push(job.data.name);
                                  if (job.data.name === "u2-bad") throw new Error("bad job");
                                  return job.data.name.toUpperCase();
                              } });
        worker.on("error", () => {});
        worker.run();
        await until("the first jobs", async () => {
            const c = await queue.getJobCounts();
            return c.completed + c.failed === 4;
        });
        await sleep(300);       // the worker is blocked in BZPOPMIN
        await add("u3", "u3-late", 3000);
        await until("the late job", async () => (await queue.getJobCounts()).completed === 4);
        out.order = seen;
        out.completed = (await queue.getCompleted()).map((j) => [j.id, j.returnvalue ?? null]).sort();
        out.failed = (await queue.getFailed()).map((j) => [j.id, j.failedReason ?? null]);
        out.counts = await queue.getJobCounts();
    } finally {
        if (worker) await bounded("closing", worker.close()).catch(() => {});
        client.disconnect();
    }
    return out;
}

// ---- redis-bucket: a leaky bucket kept with cmsgpack ----------------------

// Capacity 5 a minute (flow 5/60 s, burst 5): five pass, then refusals
// whose wait grows with each (linear backoff, factor 2: 24 s per refusal
// so far). The bucket's state is cmsgpack.pack(time, refusals, levels)
// under one key; "free" is what is left, less what leaked meanwhile
// (a few hundredths), so rounded.
async function redisBucketScenario() {
    const { create } = await import("redis-bucket");
    const client = ioredis();
    await client.connect();
    const a = await admin();
    const out = {};
    const show = (r) => r.allow ? ["allow", Math.round(r.free)] : ["wait", Math.round(r.wait)];
    try {
        const test = create({ client, prefix: "rb:", capacity: { window: 60, min: 5, max: 10 } });
        out.alice = [];
        for (let i = 0; i < 7; i++) out.alice.push(show(await test("alice")));
        await a.script("FLUSH");        // NOSCRIPT: the library falls back to EVAL
        out.after_flush = show(await test("alice"));
        out.cost = [show(await test("bob", 3)), show(await test("bob", 3))];
        // Two metrics: a rate of 2 a second (burst 4) under 5 a minute.
        const tiered = create({ client, prefix: "rb2:", rate: { flow: 2, burst: 4 },
                                capacity: { window: 60, min: 5, max: 10 } });
        out.tiered = [];
        for (let i = 0; i < 6; i++) out.tiered.push(show(await tiered("carol")));
        // The key lives until the bucket has drained: 6 (5 and the refused
        // one) at 5 a minute, 72 s.
        const ttl = await client.pttl("rb:alice");
        out.ttl = within(ttl, 72000) ? "ttl ok" : ttl;
        out.keys = (await client.keys("rb*")).sort();
    } finally {
        client.disconnect();
        a.disconnect();
    }
    return out;
}

// ---- main -----------------------------------------------------------------

const SCENARIOS = {
    "rlf-ioredis": rlfIoredis,
    "rlf-node-redis": rlfNodeRedis,
    "rlf-valkey-glide": rlfValkeyGlide,
    express: expressScenario,
    fastify: fastifyScenario,
    nest: nestScenario,
    semaphore: semaphoreScenario,
    bull: bullScenario,
    "bee-queue": beeQueueScenario,
    "redis-bucket": redisBucketScenario,
    groupmq: groupmqScenario,
};

if (!SCENARIOS[scenario] || !(port > 0)) {
    console.error(`usage: node drive.mjs <${Object.keys(SCENARIOS).join("|")}> <port>`);
    process.exit(2);
}
// A bound of the driver's own, below the test's subprocess timeout.
const guard = setTimeout(() => {
    console.error(`${scenario}: still running after 50 s`);
    process.exit(3);
}, 50000);
guard.unref();
try {
    const out = await SCENARIOS[scenario]();
    console.log(JSON.stringify(out));
    process.exit(0);
} catch (e) {
    console.error(`${scenario}: ${e.stack || e}`);
    process.exit(1);
}
