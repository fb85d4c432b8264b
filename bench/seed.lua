-- The sliding-window counter script of the seed article ("Rate Limiting
-- Tasarımı"), verbatim: the reference rlserver is measured against, run
-- on redis-server through EVALSHA. KEYS[1] the key; ARGV limit, window_ms, now
-- (-1: the server's TIME).
local limit  = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now    = tonumber(ARGV[3])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local start = now - (now % window)
local s = redis.call('HMGET', KEYS[1], 'start', 'cur', 'prev')
local oldStart = tonumber(s[1]) or start
local cur  = tonumber(s[2]) or 0
local prev = tonumber(s[3]) or 0
if start == oldStart + window then
  prev = cur; cur = 0
elseif start ~= oldStart then
  prev = 0; cur = 0
end
local elapsed  = now - start
local estimate = prev * (window - elapsed) / window + cur
if estimate + 1 > limit then
  local wait
  if cur + 1 <= limit and prev > 0 then
    wait = window - elapsed - (limit - cur - 1) * window / prev
  else
    wait = (window - elapsed) + window * (1 - (limit - 1) / math.max(cur, 1))
  end
  redis.call('HSET', KEYS[1], 'start', start, 'cur', cur, 'prev', prev)
  redis.call('PEXPIRE', KEYS[1], window * 2)
  return {0, 0, math.max(1, math.ceil(wait))}
end
cur = cur + 1
redis.call('HSET', KEYS[1], 'start', start, 'cur', cur, 'prev', prev)
redis.call('PEXPIRE', KEYS[1], window * 2)
return {1, math.floor(limit - estimate - 1), 0}
