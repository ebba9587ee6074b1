#!lua name=tbctl
-- tbctl's fleet store: one function, tbctl_grant, which grants hosts
-- credit on the fleet's keys by the store's clock alone (TIME): hosts'
-- clocks, skewed or not, never enter the arithmetic. Loaded by every
-- connection (FUNCTION LOAD REPLACE), called with FCALL by
-- user/fleet/grant.c.
--
-- Per key (a hash): t, the level in units, r, its micro-unit remainder,
-- ts, when it was last refilled (store microseconds), ep, the epoch it
-- belongs to, and per host H: o:H, the credit H holds, and e:H, when that
-- lease ends. The level never holds more than the burst less what hosts
-- hold, so t + sum(o:H) <= burst, and the fleet spends no more than
-- burst + rate * T in any T: what it spends in T was held, or in t, at
-- the start of T, or refilled during it. A lease that ends unrenewed
-- counts as spent: a host stops spending at its own end of the lease,
-- which comes earlier, since it starts counting before it asks.
--
-- Epochs: a tag's epoch is its server's run id and the instant it was
-- first seen. A restart (data lost or not) or a failover to a replica
-- brings another run id, and every key of the tag then starts empty at
-- the epoch's start: credit granted before may still be spent, and was
-- within the bound when granted, so the new epoch grants only what it
-- refills.
--
-- keys: the nep epoch keys, then the fleet keys. args: host, run id,
-- lease (ms), nep, then per fleet key: its epoch's index, rate (units/s),
-- burst, the credit the host holds, wants and returns. Returns the first
-- epoch, then each key's grant.
local function num(v) return string.format('%d', v) end
local function grant(keys, args)
  local tm = redis.call('TIME')
  local now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
  local host, run, lease, nep = args[1], args[2], tonumber(args[3]), tonumber(args[4])
  local ep, start, out = {}, {}, {}
  -- An epoch another server's run id wrote starts anew, now.
  for i = 1, nep do
    local v = redis.call('GET', keys[i])
    local r, s
    if v then r, s = string.match(v, '^(%w+):(%d+)$') end
    if r ~= run then
      s = now
      v = run .. ':' .. num(now)
      redis.call('SET', keys[i], v)
    end
    ep[i], start[i] = v, tonumber(s)
  end
  out[1] = ep[1]
  local a = 5
  for k = nep + 1, #keys do
    local key, e = keys[k], tonumber(args[a])
    local rate, cap, have = tonumber(args[a + 1]), tonumber(args[a + 2]), tonumber(args[a + 3])
    local want, ret = tonumber(args[a + 4]), tonumber(args[a + 5])
    a = a + 6
    local f = {}
    local h = redis.call('HGETALL', key)
    for i = 1, #h, 2 do f[h[i]] = h[i + 1] end
    local t, rem, ts = 0, 0, start[e]
    if f.ep == ep[e] then
      t, rem, ts = tonumber(f.t), tonumber(f.r), tonumber(f.ts)
    elseif f.ep then
      redis.call('DEL', key)
      f = {}
    end
    -- What other hosts hold under leases that still run; the rest lapsed.
    local others = 0
    for name, v in pairs(f) do
      local x = string.match(name, '^o:(.*)$')
      if x and x ~= host then
        if tonumber(f['e:' .. x] or '0') > now then
          others = others + tonumber(v)
        else
          redis.call('HDEL', key, name, 'e:' .. x)
        end
      end
    end
    local room = cap - others - have
    if room < 0 then room = 0 end
    -- Refilled to now in whole units and a micro-unit remainder,
    -- exactly (below 2^53); an idle long enough refills to the burst.
    if now > ts then
      local dt = now - ts
      if dt * rate >= cap * 1000000 then
        t, rem = cap, 0
      else
        local n = dt * rate + rem
        local add = math.floor(n / 1000000)
        rem = n - add * 1000000
        if rem < 0 then add, rem = add - 1, rem + 1000000 end
        if rem >= 1000000 then add, rem = add + 1, rem - 1000000 end
        t = t + add
      end
      ts = now
    end
    -- Capped before any grant, and again once the return is in.
    if t > room then t, rem = room, 0 end
    t = t + ret
    if t > room then t, rem = room, 0 end
    local g = want
    if g > t then g = t end
    t = t - g
    redis.call('HSET', key, 't', num(t), 'r', num(rem), 'ts', num(ts), 'ep', ep[e])
    if have + g > 0 then
      redis.call('HSET', key, 'o:' .. host, num(have + g), 'e:' .. host, num(now + lease * 1000))
    else
      redis.call('HDEL', key, 'o:' .. host, 'e:' .. host)
    end
    redis.call('PEXPIRE', key, num(math.ceil(cap * 1000 / rate) + lease + 1000))
    out[#out + 1] = g
  end
  return out
end
redis.register_function{function_name='tbctl_grant', callback=grant, flags={'allow-cross-slot-keys'}}
