-- One request against a sliding window counter, and the window it leaves, in
-- one call: the counting of the `limits` library's sliding window (its
-- acquire and read scripts), with the read of one more key of ours (the auth
-- epoch) folded in, so a request costs Redis one script.
--
-- KEYS[1] previous window's count, KEYS[2] current window's count,
-- KEYS[3] (optional) a key whose value comes back.
-- ARGV[1] limit, ARGV[2] window in ms, ARGV[3] cost (1 counts, 0 only reads).
-- Returns {allowed, previous, previous ttl ms, current, current ttl ms, value}.

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local current_ttl = tonumber(redis.call('pttl', KEYS[2]))
if current_ttl > 0 and current_ttl < window then
    -- The current window has ended: it becomes the previous one.
    redis.call('rename', KEYS[2], KEYS[1])
    redis.call('set', KEYS[2], 0, 'PX', current_ttl + window)
end

local previous = tonumber(redis.call('get', KEYS[1])) or 0
local previous_ttl = math.max(tonumber(redis.call('pttl', KEYS[1])), 0)
local current = tonumber(redis.call('get', KEYS[2])) or 0
current_ttl = math.max(tonumber(redis.call('pttl', KEYS[2])), 0)

local allowed = 0
if cost == 0 or math.floor(previous * previous_ttl / window) + current + cost <= limit then
    allowed = 1
    if cost > 0 then
        if redis.call('exists', KEYS[2]) == 1 then
            current = redis.call('incrby', KEYS[2], cost)
        else
            redis.call('set', KEYS[2], cost, 'PX', window * 2)
            current, current_ttl = cost, window * 2
        end
    end
end

local value = false
if #KEYS > 2 then
    value = redis.call('get', KEYS[3])
end
return {allowed, previous, previous_ttl, current, current_ttl, value}
