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
-- metatable there, so s:sub / s:find do not exist. The helpers below only use
-- the length operator, concatenation and byte-wise string comparison, which
-- the VM implements natively, and stay well inside the 1 s script budget.

-- CH[b + 1] is the one-byte string whose byte value is b.
local CH = {
  "\0", "\1", "\2", "\3", "\4", "\5", "\6", "\7", "\8", "\9", "\10", "\11", "\12", "\13", "\14", "\15",
  "\16", "\17", "\18", "\19", "\20", "\21", "\22", "\23", "\24", "\25", "\26", "\27", "\28", "\29", "\30", "\31",
  "\32", "\33", "\34", "\35", "\36", "\37", "\38", "\39", "\40", "\41", "\42", "\43", "\44", "\45", "\46", "\47",
  "\48", "\49", "\50", "\51", "\52", "\53", "\54", "\55", "\56", "\57", "\58", "\59", "\60", "\61", "\62", "\63",
  "\64", "\65", "\66", "\67", "\68", "\69", "\70", "\71", "\72", "\73", "\74", "\75", "\76", "\77", "\78", "\79",
  "\80", "\81", "\82", "\83", "\84", "\85", "\86", "\87", "\88", "\89", "\90", "\91", "\92", "\93", "\94", "\95",
  "\96", "\97", "\98", "\99", "\100", "\101", "\102", "\103", "\104", "\105", "\106", "\107", "\108", "\109", "\110", "\111",
  "\112", "\113", "\114", "\115", "\116", "\117", "\118", "\119", "\120", "\121", "\122", "\123", "\124", "\125", "\126", "\127",
  "\128", "\129", "\130", "\131", "\132", "\133", "\134", "\135", "\136", "\137", "\138", "\139", "\140", "\141", "\142", "\143",
  "\144", "\145", "\146", "\147", "\148", "\149", "\150", "\151", "\152", "\153", "\154", "\155", "\156", "\157", "\158", "\159",
  "\160", "\161", "\162", "\163", "\164", "\165", "\166", "\167", "\168", "\169", "\170", "\171", "\172", "\173", "\174", "\175",
  "\176", "\177", "\178", "\179", "\180", "\181", "\182", "\183", "\184", "\185", "\186", "\187", "\188", "\189", "\190", "\191",
  "\192", "\193", "\194", "\195", "\196", "\197", "\198", "\199", "\200", "\201", "\202", "\203", "\204", "\205", "\206", "\207",
  "\208", "\209", "\210", "\211", "\212", "\213", "\214", "\215", "\216", "\217", "\218", "\219", "\220", "\221", "\222", "\223",
  "\224", "\225", "\226", "\227", "\228", "\229", "\230", "\231", "\232", "\233", "\234", "\235", "\236", "\237", "\238", "\239",
  "\240", "\241", "\242", "\243", "\244", "\245", "\246", "\247", "\248", "\249", "\250", "\251", "\252", "\253", "\254", "\255",
}

-- sfBytes returns the byte values of the first `limit` bytes of s. A byte is
-- recovered by binary search: with p the already decoded prefix, p .. CH[b+1]
-- <= s holds exactly when b <= s[k].
local function sfBytes(s, limit)
  local out = {}
  if type(s) ~= "string" then
    return out
  end
  local n = #s
  if n > limit then
    n = limit
  end
  local prefix = ""
  for k = 1, n do
    local lo, hi = 0, 255
    while lo < hi do
      local x = lo + hi + 1
      local mid = (x - x % 2) / 2
      if prefix .. CH[mid + 1] <= s then
        lo = mid
      else
        hi = mid - 1
      end
    end
    out[k] = lo
    prefix = prefix .. CH[lo + 1]
  end
  return out
end

-- sfStartsWith reports whether string s begins with string p.
local function sfStartsWith(s, p)
  if type(s) ~= "string" or type(p) ~= "string" or #s < #p then
    return false
  end
  local b = sfBytes(s, #p)
  local parts = {}
  for i = 1, #b do
    parts[i] = CH[b[i] + 1]
  end
  return table.concat(parts) == p
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
  local n = #v
  if n <= 4096 then
    return v
  end
  local b = sfBytes(v, 256)
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
  return table.concat(parts) .. "... (truncated, " .. tostring(n) .. " bytes)"
end

-- sfConditions returns the condition tables of obj.status.conditions as an
-- array, accepting a list or a map of type -> condition; anything else gives {}.
local function sfConditions(status)
  local out = {}
  if type(status) ~= "table" or type(status.conditions) ~= "table" then
    return out
  end
  local conds = status.conditions
  for _, c in ipairs(conds) do
    if type(c) == "table" then
      out[#out + 1] = c
    end
  end
  if #out == 0 then
    for k, c in pairs(conds) do
      if type(c) == "table" then
        if c.type == nil and type(k) == "string" then
          local copy = {}
          for ck, cv in pairs(c) do
            copy[ck] = cv
          end
          copy.type = k
          c = copy
        end
        out[#out + 1] = c
      end
    end
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
      if c.severity == "Warning" or sfStartsWith(c.reason, "Pending") then
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
