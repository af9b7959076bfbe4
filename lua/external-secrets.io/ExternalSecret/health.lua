-- Health check for external-secrets.io/ExternalSecret.
--
-- Same semantics as Argo CD's built-in check (first Ready condition: False ->
-- Degraded, True -> Healthy; otherwise Progressing "Waiting for
-- ExternalSecret"), plus one refinement for eventual consistency:
--
-- Ready=False with reason SecretSyncedError whose message says the provider
-- object is missing ("does not exist", "ResourceNotFoundException", "can't
-- find the specified secret", "not found"; ASCII case-insensitive, first 1 KiB
-- of the message) is Progressing for a grace period of 10 minutes after
-- metadata.creationTimestamp (ESO keeps retrying with a backoff capped at
-- 7 minutes), then Degraded. Without a parseable creationTimestamp the grace
-- period cannot be placed and the built-in Degraded applies.
--
-- More than 256 conditions (sfMaxConditions; a controller writes a handful) are
-- Degraded, read no further: Argo CD stops an evaluation after one second.
--
-- Runs in Argo CD's default sandbox (no string/math libraries; os comes from
-- require("os"), the safe os with time/date) and never raises: every field is
-- type-checked before use.

-- BEGIN sfcore (from lua/_lib/sfcore.lua by `go run ./lua/gen`: the helpers this script uses)
-- Argo CD runs custom health scripts without the string and math libraries
-- (only base, table, package and a safe os with time/date). Strings have no
-- metatable there, so s:sub / s:find do not exist. Argo CD v3.4 also compiles
-- the whole script on every evaluation (v3.6 once), and compiling costs per
-- token: the fast paths below are a few lines each, and what must read a
-- string byte by byte or handle what Kubernetes does not write is source text
-- in a long string, compiled only when a value needs it. Scanning such a
-- string costs an evaluation that never needs it about a tenth of what
-- compiling it would (measured on v2.14.21, docs/benchmarks.md), and each
-- helper is its own string, so a script carries and compiles only those it uses.

-- sfMaxConditions bounds how many conditions a check reads (sfConditions):
-- an object as large as the API server stores can hold tens of thousands,
-- and Argo CD stops an evaluation after a second.
local sfMaxConditions = 256

-- sfBytesLib caches sfBytes's result for the rest of the evaluation.
local sfBytesLib = nil

-- sfBytes returns { CH, bytes, nextByte }: CH holds the 256 one-byte strings
-- (CH[b + 1] is byte b), bytes(s, limit) the first limit bytes of s as
-- numbers and nextByte(pre, s) the byte of s after its prefix pre. Without the
-- string library a byte is recovered by binary search: pre .. CH[b + 1] <= s
-- exactly when b is at most the next byte.
local function sfBytes()
  if sfBytesLib == nil then
    sfBytesLib = loadstring([==[
local p = { "return {" }
for b = 0, 255 do
  p[b + 2] = "'\\" .. b .. "',"
end
local CH = loadstring(table.concat(p) .. "}")()
local E = { 128, 64, 32, 16, 8, 4, 2, 1 }
local function nextByte(pre, s)
  local b = 0
  for j = 1, 8 do
    if pre .. CH[b + E[j] + 1] <= s then
      b = b + E[j]
    end
  end
  return b
end
local function bytes(s, limit)
  local out, pre = {}, ""
  local n = #s
  if n > limit then
    n = limit
  end
  for k = 1, n do
    local b = nextByte(pre, s)
    out[k], pre = b, pre .. CH[b + 1]
  end
  return out
end
return { CH, bytes, nextByte }
]==])()
  end
  return sfBytesLib
end

-- sfSearchFn caches sfContainsAny's compiled search.
local sfSearchFn = nil

-- sfContainsAny reports whether the first limit bytes of s, ASCII letters
-- lowercased, contain one of needles (lowercase strings). It reads s a byte
-- at a time and stops at the first needle found.
local function sfContainsAny(s, needles, limit)
  if type(s) ~= "string" then
    return false
  end
  if sfSearchFn == nil then
    sfSearchFn = loadstring([==[
local CH, _, nextByte = unpack(...)
return function(s, needles, limit)
  local n = #s
  if n > limit then
    n = limit
  end
  local pre, low = "", { [0] = "" }
  for k = 1, n do
    local b = nextByte(pre, s)
    pre = pre .. CH[b + 1]
    if b >= 65 and b <= 90 then
      b = b + 32
    end
    low[k] = low[k - 1] .. CH[b + 1]
    for _, needle in ipairs(needles) do
      local l = #needle
      if l > 0 and l <= k and low[k] == low[k - l] .. needle then
        return true
      end
    end
  end
  return false
end
]==])(sfBytes())
  end
  return sfSearchFn(s, needles, limit)
end

-- sfTruncateFn caches sfTruncate's compiled function.
local sfTruncateFn = nil

-- sfTruncate cuts a string to its first 256 bytes, on a UTF-8 boundary, and
-- says how long it was.
local function sfTruncate(v)
  if sfTruncateFn == nil then
    sfTruncateFn = loadstring([==[
local CH, bytes = unpack(...)
return function(v)
  local b = bytes(v, 256)
  local k = #b
  local cut = k
  while cut > 0 and b[cut] >= 128 and b[cut] < 192 do
    cut = cut - 1
  end
  if cut > 0 and b[cut] >= 192 then
    local need = 2
    if b[cut] >= 240 then
      need = 4
    elseif b[cut] >= 224 then
      need = 3
    end
    if k - cut + 1 < need then
      k = cut - 1
    end
  end
  local parts = {}
  for i = 1, k do
    parts[i] = CH[b[i] + 1]
  end
  return table.concat(parts) .. "... (truncated, " .. #v .. " bytes)"
end
]==])(sfBytes())
  end
  return sfTruncateFn(v)
end

-- sfExactTimeLib caches sfExactTime's helpers.
local sfExactTimeLib = nil

-- sfExactTime returns { parse, format } for the timestamps sfTime's bisection
-- does not take: parse reads any RFC 3339 timestamp into Unix seconds (nil if
-- it is not one), format writes Unix seconds as RFC 3339 UTC, both by
-- arithmetic.
local function sfExactTime()
  if sfExactTimeLib == nil then
    sfExactTimeLib = loadstring([==[
local bytes = (...)[2]
local function floor(x)
  return x - x % 1
end
local function daysFromCivil(y, m, d)
  if m <= 2 then
    y = y - 1
  end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end
local function parseTime(s)
  if type(s) ~= "string" or #s < 20 or #s > 64 then
    return nil
  end
  local b = bytes(s, 64)
  local function num(i, j)
    local v = 0
    for k = i, j do
      local c = b[k]
      if c == nil or c < 48 or c > 57 then
        return nil
      end
      v = v * 10 + (c - 48)
    end
    return v
  end
  if b[5] ~= 45 or b[8] ~= 45 or (b[11] ~= 84 and b[11] ~= 116 and b[11] ~= 32) or b[14] ~= 58 or b[17] ~= 58 then
    return nil
  end
  local y, mo, d = num(1, 4), num(6, 7), num(9, 10)
  local h, mi, se = num(12, 13), num(15, 16), num(18, 19)
  if y == nil or mo == nil or d == nil or h == nil or mi == nil or se == nil then
    return nil
  end
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or se > 60 then
    return nil
  end
  local i = 20
  if b[i] == 46 then
    i = i + 1
    while b[i] ~= nil and b[i] >= 48 and b[i] <= 57 do
      i = i + 1
    end
  end
  local offset = 0
  if (b[i] == 90 or b[i] == 122) and i == #b then
    offset = 0
  elseif (b[i] == 43 or b[i] == 45) and i + 5 == #b and b[i + 3] == 58 then
    local oh, om = num(i + 1, i + 2), num(i + 4, i + 5)
    if oh == nil or om == nil or oh > 23 or om > 59 then
      return nil
    end
    offset = oh * 3600 + om * 60
    if b[i] == 45 then
      offset = -offset
    end
  else
    return nil
  end
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset
end
local function formatTime(t)
  local function pad(v, w)
    local s = tostring(v)
    while #s < w do
      s = "0" .. s
    end
    return s
  end
  t = floor(t)
  local days = floor(t / 86400)
  local secs = t - days * 86400
  local z = days + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if mp >= 10 then
    m = mp - 9
  end
  if m <= 2 then
    y = y + 1
  end
  local h = floor(secs / 3600)
  local mi = floor((secs - h * 3600) / 60)
  local se = secs - h * 3600 - mi * 60
  return pad(y, 4) .. "-" .. pad(m, 2) .. "-" .. pad(d, 2) .. "T" .. pad(h, 2) .. ":" .. pad(mi, 2) .. ":" .. pad(se, 2) .. "Z"
end
return { parseTime, formatTime }
]==])(sfBytes())
  end
  return sfExactTimeLib
end

-- sfMapConditions returns the conditions given as a map of type -> condition
-- as an array, each with its type, or {} and true when the map has more than
-- sfMaxConditions entries. A condition without a type is copied with only the
-- fields the checks read.
local function sfMapConditions(conds)
  return loadstring([==[
local conds, max = ...
local out, n = {}, 0
for k, c in pairs(conds) do
  n = n + 1
  if n > max then
    return {}, true
  end
  if type(c) == "table" then
    if c.type == nil and type(k) == "string" then
      c = { type = k, status = c.status, reason = c.reason, message = c.message, severity = c.severity }
    end
    out[#out + 1] = c
  end
end
return out
]==])(conds, sfMaxConditions)
end

-- sfText converts a status field into a message string, truncating anything
-- over 4 KiB to its first 256 bytes (cut on a UTF-8 boundary). Non-scalar
-- values yield nil.
local function sfText(v)
  if type(v) == "number" then
    return tostring(v)
  end
  if type(v) ~= "string" then
    return nil
  end
  if #v <= 4096 then
    return v
  end
  return sfTruncate(v)
end

-- sfTimeLib caches sfTime's helpers for the rest of the evaluation.
local sfTimeLib = nil

-- sfTime returns parse (an RFC 3339 timestamp into Unix seconds, or nil) and
-- format (Unix seconds as RFC 3339 UTC), compiled on first use.
-- What Kubernetes writes (UTC, "Z", whole seconds) is found by bisection
-- over os.date, whose output sorts as the time it shows: 35 calls, no
-- parsing. Anything else (a fraction, an offset, a year before 1970) goes to
-- sfExactTime, and so does a controller whose os.date is not in UTC: Argo CD's
-- safe os.date drops "!" when given a time and formats in the local zone
-- ("%z" is then not +0000).
local function sfTime()
  if sfTimeLib == nil then
    sfTimeLib = loadstring([==[
local exact = ...
local os = require("os")
local RFC3339 = "!%Y-%m-%dT%H:%M:%SZ"
local function parse(s)
  if type(s) ~= "string" or #s < 20 or #s > 64 then
    return nil
  end
  local u = 0
  for k = 34, 0, -1 do
    if os.date(RFC3339, u + 2 ^ k) <= s then
      u = u + 2 ^ k
    end
  end
  if os.date(RFC3339, u) == s and os.date("!%z", u) == "+0000" then
    return u
  end
  return exact()[1](s)
end
local function format(t)
  if os.date("!%z", t) == "+0000" then
    return os.date(RFC3339, t)
  end
  return exact()[2](t)
end
return { parse = parse, format = format }
]==])(sfExactTime)
  end
  return sfTimeLib
end

-- sfConditions returns the condition tables of obj.status.conditions as an
-- array, accepting a list or a map of type -> condition; anything else gives {}.
-- More than sfMaxConditions conditions give {} and true, read no further.
local function sfConditions(status)
  local conds = type(status) == "table" and status.conditions
  if type(conds) ~= "table" then
    return {}
  end
  if conds[sfMaxConditions + 1] ~= nil then
    return {}, true
  end
  local out = {}
  for _, c in ipairs(conds) do
    if type(c) == "table" then
      out[#out + 1] = c
    end
  end
  if #out == 0 and next(conds) ~= nil then
    return sfMapConditions(conds)
  end
  return out
end

-- sfTooMany is the health of an object with more than sfMaxConditions
-- conditions, which no controller writes: Degraded, without reading them.
local function sfTooMany()
  return { status = "Degraded", message = "status.conditions has more than " .. sfMaxConditions ..
      " entries; a controller writes a handful, and spokeforge's health check reads no further" }
end
-- END sfcore

local GRACE_SECONDS = 600
-- In lower case: the message is searched with its ASCII letters lowercased.
-- External Secrets v0.16 and v1 write only "could not get secret data from
-- provider" into the condition, whatever the provider answered (the cause,
-- such as "Secret does not exist", goes to an UpdateFailed Event that this
-- check cannot read): that message counts as a missing secret while young.
local MISSING = { "does not exist", "resourcenotfoundexception", "can't find the specified secret", "not found",
  "could not get secret data from provider" }

local function health()
  local conds, tooMany = sfConditions(obj.status)
  if tooMany then
    return sfTooMany()
  end
  for _, c in ipairs(conds) do
    if c.type == "Ready" and c.status == "False" then
      local msg = sfText(c.message)
      -- In grace first: the message search reads bytes one by one (sfContainsAny).
      if c.reason == "SecretSyncedError" and type(obj.metadata) == "table" then
        local time = sfTime()
        local created = time.parse(obj.metadata.creationTimestamp)
        if created ~= nil and require("os").time() < created + GRACE_SECONDS
            and sfContainsAny(c.message, MISSING, 1024) then
          local m = "Waiting for the provider secret to appear (grace period until " ..
              time.format(created + GRACE_SECONDS) .. ")"
          if msg ~= nil and msg ~= "" then
            m = m .. ": " .. msg
          end
          return { status = "Progressing", message = m }
        end
      end
      return { status = "Degraded", message = msg }
    end
    if c.type == "Ready" and c.status == "True" then
      return { status = "Healthy", message = sfText(c.message) }
    end
  end
  return { status = "Progressing", message = "Waiting for ExternalSecret" }
end

local ok, hs = pcall(health)
if ok and type(hs) == "table" then
  return hs
end
return { status = "Unknown", message = "spokeforge health script failed: " .. (sfText(hs) or "unknown error") }
