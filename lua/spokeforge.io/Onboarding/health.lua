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
-- More than 256 conditions (sfMaxConditions; a controller writes a handful) are
-- Degraded, read no further: Argo CD stops an evaluation after one second.
--
-- Runs in Argo CD's default sandbox (no string/math libraries) and never
-- raises: every field is type-checked before use.

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
  local conds, tooMany = sfConditions(status)
  if tooMany then
    return sfTooMany()
  end
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
