-- Health check for spokeforge.io/Onboarding.
--
-- The spokeforge agent reports one condition per onboarding boundary, in the
-- fixed order Identity, Secrets, Certificates, Registry, Queues, Storage,
-- Workload, plus a summary Ready condition. The first boundary (in that order,
-- not list order) that is not True decides the health:
--   missing / Unknown             -> Progressing "<boundary>: not checked yet"
--   False, severity Warning or
--   reason starting with Pending  -> Progressing
--   False otherwise               -> Degraded
-- with message "<boundary>: <message> (<boundaries already True> ready)".
-- All seven True -> Healthy with the Ready message. A missing status, no
-- conditions, or status.observedGeneration < metadata.generation means the
-- agent has not reported on the current spec yet -> Progressing.
--
-- Runs in Argo CD's default sandbox (no string/math libraries) and never
-- raises: every field is type-checked before use.

-- BEGIN sfcore (from lua/_lib/sfcore.lua by `go run ./lua/gen`: the helpers this script uses)
-- Argo CD runs custom health scripts without the string and math libraries
-- (only base, table, package and a safe os with time/date). Strings have no
-- metatable there, so s:sub / s:find do not exist. Argo CD also compiles the
-- whole script on every evaluation, and compiling costs per token: the fast
-- paths below are a few lines each, and what must read a string byte by byte
-- is source text that is only compiled when a value needs it (sfSlow).

-- sfSlowLib caches sfSlow's helpers for the rest of the evaluation.
local sfSlowLib = nil

-- sfSlow returns the helpers for what Kubernetes does not write and for
-- reading a string byte by byte: truncate (a string over 4 KiB cut to its
-- first 256 bytes on a UTF-8 boundary), containsAny (whether the first
-- `limit` bytes, ASCII-lowercased, contain a lowercase needle), parseTime (any RFC 3339 timestamp),
-- formatTime (RFC 3339 UTC by arithmetic) and mapConditions (conditions
-- given as a map of type -> condition). Without the string library a byte is recovered by binary
-- search: with p the decoded prefix, p .. CH[b + 1] <= s exactly when b is at
-- most the next byte, and CH holds the 256 one-byte strings. Kept in a long
-- string, all of it costs an evaluation that never needs it about a tenth of
-- what compiling it would (go test ./lua -bench Health).
local function sfSlow()
  if sfSlowLib == nil then
    sfSlowLib = loadstring([==[
local p = { "return {" }
for b = 0, 255 do
  p[b + 2] = "'\\" .. b .. "',"
end
local CH = loadstring(table.concat(p) .. "}")()
local function floor(x)
  return x - x % 1
end
local function bytes(s, limit)
  local out, pre = {}, ""
  local n = #s
  if n > limit then
    n = limit
  end
  for k = 1, n do
    local b = 0
    for e = 7, 0, -1 do
      if pre .. CH[b + 2 ^ e + 1] <= s then
        b = b + 2 ^ e
      end
    end
    out[k], pre = b, pre .. CH[b + 1]
  end
  return out
end
local function containsAny(s, needles, limit)
  if type(s) ~= "string" then
    return false
  end
  local b = bytes(s, limit)
  local low = { [0] = "" }
  for i = 1, #b do
    local c = b[i]
    if c >= 65 and c <= 90 then
      c = c + 32
    end
    low[i] = low[i - 1] .. CH[c + 1]
  end
  for _, needle in ipairs(needles) do
    for i = 0, #b - #needle do
      if #needle > 0 and low[i + #needle] == low[i] .. needle then
        return true
      end
    end
  end
  return false
end
local function truncate(v)
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
local function mapConditions(conds)
  local out = {}
  for k, c in pairs(conds) do
    if type(c) == "table" then
      if c.type == nil and type(k) == "string" then
        local copy = { type = k }
        for ck, cv in pairs(c) do
          copy[ck] = cv
        end
        c = copy
      end
      out[#out + 1] = c
    end
  end
  return out
end
return { truncate = truncate, containsAny = containsAny, parseTime = parseTime, formatTime = formatTime, mapConditions = mapConditions }
]==])()
  end
  return sfSlowLib
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
  return sfSlow().truncate(v)
end

-- sfConditions returns the condition tables of obj.status.conditions as an
-- array, accepting a list or a map of type -> condition; anything else gives {}.
local function sfConditions(status)
  local conds = type(status) == "table" and status.conditions
  if type(conds) ~= "table" then
    return {}
  end
  local out = {}
  for _, c in ipairs(conds) do
    if type(c) == "table" then
      out[#out + 1] = c
    end
  end
  if #out == 0 and next(conds) ~= nil then
    return sfSlow().mapConditions(conds)
  end
  return out
end
-- END sfcore

local BOUNDARIES = {
  { "Identity", "identity" },
  { "Secrets", "secrets" },
  { "Certificates", "certificates" },
  { "Registry", "registry" },
  { "Queues", "queues" },
  { "Storage", "storage" },
  { "Workload", "workload" },
}
local WAITING = "Waiting for the spokeforge agent to report"

local function health()
  local status = obj.status
  if type(status) ~= "table" then
    return { status = "Progressing", message = WAITING }
  end
  local conds = sfConditions(status)
  if #conds == 0 then
    return { status = "Progressing", message = WAITING }
  end
  local meta = obj.metadata
  if type(meta) == "table" and type(meta.generation) == "number" and type(status.observedGeneration) == "number"
      and status.observedGeneration < meta.generation then
    return { status = "Progressing", message = WAITING }
  end

  local byType = {}
  for _, c in ipairs(conds) do
    if type(c.type) == "string" and byType[c.type] == nil then
      byType[c.type] = c
    end
  end

  local ready = {}
  for _, b in ipairs(BOUNDARIES) do
    local c = byType[b[1]]
    local st = nil
    if c ~= nil then
      st = c.status
    end
    if st == "True" then
      ready[#ready + 1] = b[2]
    elseif st == "False" then
      local hs = { status = "Degraded" }
      -- A reason starting with "Pending" sorts from "Pending" up to "Pendinh".
      local r = c.reason
      if c.severity == "Warning" or (type(r) == "string" and r >= "Pending" and r < "Pendinh") then
        hs.status = "Progressing"
      end
      local msg = sfText(c.message)
      if msg == nil or msg == "" then
        msg = sfText(c.reason)
      end
      if msg == nil or msg == "" then
        msg = "condition is False"
      end
      hs.message = b[2] .. ": " .. msg
      if #ready > 0 then
        hs.message = hs.message .. " (" .. table.concat(ready, ", ") .. " ready)"
      end
      return hs
    else
      return { status = "Progressing", message = b[2] .. ": not checked yet" }
    end
  end

  local msg = nil
  local rc = byType["Ready"]
  if rc ~= nil and rc.status == "True" then
    msg = sfText(rc.message)
  end
  if msg == nil or msg == "" then
    msg = "all onboarding contracts hold"
  end
  return { status = "Healthy", message = msg }
end

local ok, hs = pcall(health)
if ok and type(hs) == "table" then
  return hs
end
return { status = "Unknown", message = "spokeforge health script failed: " .. (sfText(hs) or "unknown error") }
