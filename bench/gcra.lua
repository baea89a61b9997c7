-- bench/gcra.lua: a GCRA rate limiter for Redis 7, as people write it when
-- they do not have the redis-cell module. It is the second baseline of
-- bench/run.sh (the first is Redis's own INCR).
--
--   EVALSHA <sha> 1 <key> <max_burst> <count> <period> [<quantity>]
--
-- Same arguments and the same 5-integer reply as CL.THROTTLE:
--   { limited (0/1), limit (= max_burst + 1), remaining,
--     retry_after (s, -1 when allowed), reset_after (s) }
--
-- GCRA in one paragraph: the only state is the TAT ("theoretical arrival
-- time"), the instant at which the bucket would be full again. One token
-- is worth the emission interval ei = period / count; the bucket holds
-- limit = max_burst + 1 tokens, i.e. the TAT may run at most
-- dvt = ei * limit ahead of now (the delay variation tolerance). A request
-- for q tokens moves the TAT to max(tat, now) + q * ei, and is allowed iff
-- that new TAT is at most dvt ahead of now. Limited requests change nothing.
--
-- Arithmetic is in integer microseconds. Lua 5.1 numbers are doubles, exact
-- up to 2^53 µs (~285 years), so "now" in µs since the epoch (~1.8e15) and
-- every sum below stay exact; nanoseconds (~1.8e18) would not. It is not
-- bit-exact with redis-cell, which works in ns and has its own rounding
-- quirks (spec section 4): ei is truncated to whole µs here (redis-cell:
-- whole ns), and retry_after/reset_after are plainly rounded up to whole
-- seconds. Allow/limit decisions agree except within that sub-µs slack.
--
-- The clock is Redis's TIME, read inside the script. Redis 7 replicates the
-- script's effects (the SET), not the script, so a non-deterministic command
-- before a write is allowed.

local key = KEYS[1]

-- An argument as an integer, or nil (also for NaN, inf and |n| > 2^53,
-- where doubles stop being exact).
local function int_arg(v)
    local n = tonumber(v)
    if n and n == math.floor(n) and math.abs(n) <= 9007199254740992 then
        return n
    end
    return nil
end

local max_burst = int_arg(ARGV[1])
local count = int_arg(ARGV[2])
local period = int_arg(ARGV[3])
local quantity = int_arg(ARGV[4] or '1')
if not (max_burst and count and period and quantity) then
    return redis.error_reply('ERR value is not an integer or out of range')
end

-- No negative or zero rates: they would make the math meaningless (redis-cell
-- accepts them and computes nonsense; a hand-written script rejects them).
if max_burst < 0 or count <= 0 or period <= 0 or quantity < 0 then
    return redis.error_reply('ERR max_burst and quantity must be >= 0, count and period > 0')
end

local ei = math.floor(period * 1000000 / count)   -- emission interval, µs
if ei < 1 then
    return redis.error_reply('ERR rate too high: less than 1 microsecond per token')
end
local limit = max_burst + 1
local dvt = ei * limit             -- how far the TAT may run ahead of now
local increment = ei * quantity    -- what this request costs

local t = redis.call('TIME')       -- { seconds, microseconds }, strings
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- A missing (expired) key is a full bucket: TAT = now. A TAT in the past is
-- also a full bucket (tokens do not accumulate beyond the limit).
local tat = tonumber(redis.call('GET', key)) or now
if tat < now then
    tat = now
end

local new_tat = tat + increment
local allow_at = new_tat - dvt     -- earliest instant this request fits

local limited, retry_after, ttl
if now < allow_at then
    -- Limited: leave the key alone. If the request is bigger than the whole
    -- bucket it can never succeed, which CL.THROTTLE reports as retry -1.
    limited = 1
    if increment <= dvt then
        retry_after = allow_at - now
    else
        retry_after = -1
    end
    ttl = tat - now
else
    -- Allowed: store the new TAT and let the key expire when the TAT is
    -- reached (the bucket is full again then, and a missing key means the
    -- same thing). SET ... PX is SET + PEXPIRE in one command. PX must be
    -- > 0, so the TTL is rounded up to whole ms (the key may outlive its TAT
    -- by < 1 ms, harmless since a past TAT counts as now); a TTL of 0 (a
    -- quantity-0 peek on a full bucket) means the key is not needed at all.
    limited = 0
    retry_after = -1
    ttl = new_tat - now
    local ttl_ms = math.ceil(ttl / 1000)
    if ttl_ms > 0 then
        redis.call('SET', key, string.format('%d', new_tat), 'PX', ttl_ms)
    else
        redis.call('DEL', key)
    end
end

-- Whole tokens left: the unused part of the tolerance divided by ei.
local remaining = math.floor((dvt - ttl) / ei)
if remaining < 0 then
    remaining = 0
end

-- Durations go out in whole seconds, rounded up (a client that waits
-- retry_after seconds is then really allowed); -1 stays -1.
local function secs(us)
    if us < 0 then
        return -1
    end
    return math.ceil(us / 1000000)
end

return { limited, limit, remaining, secs(retry_after), secs(ttl) }
